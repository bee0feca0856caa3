"""Mounts every router; nothing else."""

from fastapi import APIRouter

from app.api.routes import health, ingest, streams, traces

api_router = APIRouter()
api_router.include_router(health.router)
api_router.include_router(ingest.router)
api_router.include_router(traces.router)
api_router.include_router(streams.router)
