"""The local page of `llm-codesign serve`: a FastAPI app (app.py) and its static files (static/).
Needs the optional extra `serve`; nothing here is imported by the core."""
