"""OpenCLIP embeddings for images and texts: GPU decode and bf16 on CUDA, PIL on CPU."""

from pipelines.embedding.embedder import ClipEmbedder, ImageEmbeddings
from pipelines.embedding.image_probe import DEFAULT_MAX_PIXELS, ImageItemError, ItemError

__all__ = ["DEFAULT_MAX_PIXELS", "ClipEmbedder", "ImageEmbeddings", "ImageItemError", "ItemError"]
