"""One module per backend, each with `create(**options) -> Backend`; see `select`."""
