"""chatui package."""
