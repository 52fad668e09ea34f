"""Shared pytest setup. Doctests get no injected names: each example imports what it uses."""

import matplotlib

matplotlib.use("Agg")
