"""The web UI under /ui: assessments, reports, trials, comparisons and a leaderboard, rendered on the server
(Jinja2 templates, a small script for live progress, every asset shipped in this package)."""
