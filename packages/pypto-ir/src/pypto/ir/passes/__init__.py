"""Compiler passes, one module each. Every pass maps a Program to a Program."""
