"""Pure: standard-library helpers with no domain words (safe text, exit codes, memo).

Nothing here does I/O; ``tests/project/test_purity.py`` says so.
"""
