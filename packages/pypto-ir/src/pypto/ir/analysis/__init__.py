"""Analyses of the IR: they read a Program and answer a question, they never rewrite it."""
