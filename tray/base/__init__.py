"""Pure: standard-library helpers with no domain words (safe text, JSON text, exit codes).

Nothing here does I/O; ``tests/project/test_purity.py`` says so.
"""
