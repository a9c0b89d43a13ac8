"""Fixtures for tests/integration: Chromium (tests/helpers/browser.py)."""

from tests.helpers.browser import browser  # noqa: F401 - a pytest fixture, found here by name
