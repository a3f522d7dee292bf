"""The privacy tests' fixtures, one of each per module: the OS users (`uids`) and the
loaded database (`db`), from tests/privacy/privacy_db.py (the site tests import them too)."""

from tests.privacy.privacy_db import db, uids  # noqa: F401 (fixtures)
