"""External backends: the backend YAML (`spec`), its resolution against the model (`model`),
the missing-kernel check and the backend's header and registration sources (`emit`)."""
