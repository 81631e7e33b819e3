"""The ground station: PyQt6 app and headless mode (the only package that may import Qt)."""
