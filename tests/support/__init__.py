"""Scenario builders a unit test and its daemon twin share."""
