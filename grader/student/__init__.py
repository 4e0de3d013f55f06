"""The student commands: `make lab`, `make check` and `make submit`."""
