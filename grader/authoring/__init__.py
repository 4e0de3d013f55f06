"""Authoring commands: re-execute the reference notebooks (`make reference`), release them (`make release`)."""
