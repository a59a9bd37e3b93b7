"""Web addresses checked as a browser reads them: ``web_url``, defined in
``research_fsm.sources.urls`` (the sources check the addresses they return; ``common``
stands above ``sources``) and handed on here for the apps and the page."""

from ..sources.urls import web_url

__all__ = ["web_url"]
