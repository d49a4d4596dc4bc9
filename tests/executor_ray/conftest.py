"""One real two-node Ray cluster (head + a worker node, each its own ``ray start``) per module."""

from sevro_executor_ray.testing import ray_cluster

__all__ = ["ray_cluster"]
