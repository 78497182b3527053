"""User-facing errors: each prints as one clear line (no traceback unless --verbosity debug)."""


class HarnessError(Exception):
    """An error the user can fix (bad spec, missing dataset, malformed YAML); shown as one line."""


class TaskConfigError(HarnessError):
    """A task YAML is malformed, references a missing function, or names an unknown task."""


class ModelSpecError(HarnessError):
    """A model spec string or its arguments cannot be served."""


class DatasetError(HarnessError):
    """A dataset cannot be found or loaded."""


class UnsupportedRequestError(HarnessError):
    """A backend cannot serve a request type or a generation setting."""
