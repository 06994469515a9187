"""Tests of the project as a whole: import layers, packaging files, the manual's
commands and links."""
