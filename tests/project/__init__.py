"""Tests of the project as a whole: import layers, packaging files, the README's commands."""
