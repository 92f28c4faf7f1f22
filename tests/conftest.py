import os

# Our own bugs must fail tests instead of being logged and swallowed.
os.environ["RAGAS_TRACE_RAISE_INTERNAL_ERRORS"] = "1"
