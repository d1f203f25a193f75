"""Exceptions of the tessera package."""


class TesseraError(Exception):
    """Tessera refused an input or failed.

    Attributes:
      message:    Tessera's own message (the file, line and key, or the layer, that is wrong);
                  temporary files the package wrote are named by what they hold
                  (``<arch dict 'tpu-v1'>``, ``configs/tpu-v1.yaml + overrides``).
      returncode: the executable's exit status (2: bad input, 1: internal error, 3: a sweep whose
                  environment failed, 130: interrupted; negative: killed by that signal), or None
                  when no process ran (the executable is missing, a timeout expired, a bad
                  argument was caught in Python).
      stderr:     everything the executable wrote on stderr ("" when none ran).
      command:    the command line that ran (a list), or None.
    """

    def __init__(self, message, returncode=None, stderr="", command=None):
        super().__init__(message)
        self.message = message
        self.returncode = returncode
        self.stderr = stderr
        self.command = command

    def __str__(self):
        return self.message

    def __repr__(self):
        return f"{type(self).__name__}({self.message!r}, returncode={self.returncode!r})"


class TesseraNotFoundError(TesseraError, FileNotFoundError):
    """The tessera executable is not where the package looked (build it, or set TESSERA_BIN)."""
