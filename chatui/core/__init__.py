"""The headless core of the app: config, the workspace, turns, reply jobs and their
events, the chat on screen's state. Nothing here draws; `chatui.tui` does."""
