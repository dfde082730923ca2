"""Unit tests in sub-folders (mirroring the package's) import the shared fixtures of this folder's
modules (`from test_analysis import catalog`): pytest puts a conftest's folder on sys.path."""
