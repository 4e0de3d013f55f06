"""Release and autograde step: nbgrader's CheckCellMetadata, with nbgrader's schema checked once per process.

nbgrader's validator calls `jsonschema.validate` for each cell's metadata, which first checks the
schema itself against its meta-schema: nine tenths of a notebook's validation. Here the schema, read
from nbgrader's own file as nbgrader reads it, is checked once and its validator reused; every cell
is validated against it exactly as before, with nbgrader's other checks unchanged.
"""

from __future__ import annotations

import traceback
from functools import cache

import jsonschema
from nbgrader.nbgraderformat import MetadataValidator, SchemaTooNewError, SchemaTooOldError, ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheckCellMetadata


@cache
def _validator() -> jsonschema.protocols.Validator:
    """The validator of nbgrader's metadata schema, the schema itself checked (once)."""
    schema = MetadataValidator().schema
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


class _CheckedSchema(BaseMetadataValidator):
    """BaseMetadataValidator.validate_cell, with the checked schema's validator."""

    def validate_cell(self, cell) -> None:
        if "nbgrader" not in cell.metadata:
            return
        version = cell.metadata["nbgrader"].get("schema_version", 0)
        if version < self.schema_version:
            raise SchemaTooOldError(f"Outdated schema version: {version} (expected {self.schema_version})",
                                    version, self.schema_version)
        if version > self.schema_version:
            raise SchemaTooNewError(f"Schema version is too new: {version} (expected {self.schema_version})",
                                    version, self.schema_version)
        error = jsonschema.exceptions.best_match(_validator().iter_errors(cell.metadata["nbgrader"]))
        if error is not None:  # the error jsonschema.validate would raise
            raise error


class _Validator(MetadataValidator, _CheckedSchema):
    """nbgrader's MetadataValidator, whose base schema check is `_CheckedSchema`'s (by the method order)."""


class CheckCellMetadata(NbgraderCheckCellMetadata):
    """nbgrader's CheckCellMetadata, validating with `_Validator`."""

    def preprocess(self, nb, resources):
        try:
            _Validator().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            msg = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(msg)
            raise ValidationError(msg) from None
        return nb, resources
