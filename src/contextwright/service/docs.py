"""``/docs`` and ``/redoc`` with their assets served by the app itself, so they render offline.

FastAPI's default pages load Swagger UI and ReDoc from a CDN, which leaves
them blank on a machine without internet access. The assets come from the
installed ``fastapi-offline`` package (its ``static/`` folder: Swagger UI 5,
which renders OpenAPI 3.1, and ReDoc) and are served under ``/docs/static/``.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Any

from contextwright.core.errors import missing_extra

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["STATIC", "add_docs"]

STATIC = "/docs/static"
_FILES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
    "favicon.png": "image/png",
}


def _asset(name: str) -> bytes:
    try:
        return (resources.files("fastapi_offline") / "static" / name).read_bytes()
    except ModuleNotFoundError:
        raise missing_extra("fastapi_offline", "service") from None


def add_docs(app: FastAPI, *, title: str) -> None:
    """Add ``/docs`` (Swagger UI), ``/redoc`` and their local assets to ``app`` (built with ``docs_url=None``)."""
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
    from fastapi.responses import HTMLResponse, Response

    openapi_url = app.openapi_url or "/openapi.json"
    for name in _FILES:
        _asset(name)  # fail at start-up, not on the first visit, when the package is missing

    @app.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{title} - Swagger UI",
            swagger_js_url=f"{STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC}/swagger-ui.css",
            swagger_favicon_url=f"{STATIC}/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{title} - ReDoc",
            redoc_js_url=f"{STATIC}/redoc.standalone.js",
            redoc_favicon_url=f"{STATIC}/favicon.png",
            with_google_fonts=False,
        )

    @app.get(STATIC + "/{name}", include_in_schema=False)
    async def static(name: str) -> Any:
        media = _FILES.get(name)
        if media is None:
            return Response(status_code=404)
        return Response(_asset(name), media_type=media, headers={"Cache-Control": "public, max-age=86400"})
