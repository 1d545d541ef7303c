import pytest

# tests/conftest.py imports the tier plugin (tests/tiers.py) before pytest loads it as a plugin: rewrite it anyway.
pytest.register_assert_rewrite("tests.tiers")
