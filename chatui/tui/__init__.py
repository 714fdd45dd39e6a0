"""The Textual face of chatui: the app, its screens and theming.

Everything outside this package is headless (no textual, rich or widgets);
import-linter holds that line.
"""
