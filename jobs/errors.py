"""Errors a user caused (bad arguments, missing inputs): printed as one line, exit code 2, no traceback."""


class UsageError(ValueError):
    user_facing = True
