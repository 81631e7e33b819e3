"""What several components share: typed actions and poses, camera profiles, clocks, errors, config.

Imports nothing else of this project, so every component can depend on it.
"""
