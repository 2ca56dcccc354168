"""Tests of the review web app (rescue review)."""
