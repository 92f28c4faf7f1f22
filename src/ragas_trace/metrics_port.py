"""What ``setup(metrics_port=P)`` does, wherever it runs: in one process, in each
worker of a pre-fork server, in its master before the fork (``--preload``), or in
both. It never raises for a port it cannot bind; it says in one log line what it
did instead.

- ``PROMETHEUS_MULTIPROC_DIR`` set (the pre-fork recipe, docs/guides/production.md):
  every process records into its own files there; the process that binds P serves
  the merge of all of them; a process that finds P taken says so and goes on
  recording (the first worker of a server to find it taken says so at WARNING,
  the others at DEBUG), and tries P again every ``STANDBY_S`` seconds: when the
  serving worker exits, a running sibling or the next process to start binds it
  (gunicorn's reload starts the new workers before it stops the old ones, so no
  process starts after the serving one is gone). The files, and so the counts,
  outlive every process.
- Not set: the process that binds P serves its own metrics. Another that finds P
  taken serves none (a warning names the fix), and a process forked from the
  serving one (``--preload``) is warned that its metrics are not in that scrape.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import threading
import weakref

from opentelemetry.metrics import MeterProvider, NoOpMeterProvider
from opentelemetry.sdk.resources import Resource

from ragas_trace import _thread_signals, providers
from ragas_trace._internal_errors import record_internal_error
from ragas_trace._processes import alive
from ragas_trace.exporters import multiprocess_metrics

logger = logging.getLogger("ragas_trace")
GUIDE = "docs/guides/production.md, 'Pre-fork servers'"
STANDBY_S = 5.0  # how often a worker that found the port taken tries it again


class Standby:
    """The metrics endpoint of a worker that found the port taken: it tries the port
    again every ``STANDBY_S`` seconds until it binds it (then serves the merge of
    the multiprocess directory, as the worker that held it did) or is closed."""

    def __init__(self, port: int, host: str, resource: Resource, path: str) -> None:
        self._args = (port, host, resource, path)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._endpoint: providers.PrometheusEndpoint | None = None
        _thread_signals.start(threading.Thread(target=self._watch, daemon=True,
                                               name="ragas-trace-metrics-standby"))

    @property
    def serving(self) -> bool:
        endpoint = self._endpoint
        return endpoint is not None and endpoint.serving

    @property
    def port(self) -> int:
        return self._endpoint.port if self._endpoint is not None else self._args[0]

    @property
    def host(self) -> str:
        return self._endpoint.host if self._endpoint is not None else self._args[1]

    def close(self, timeout_millis: float) -> None:
        with self._lock:
            self._closed.set()
            endpoint = self._endpoint
        if endpoint is not None:
            endpoint.close(timeout_millis)

    def _watch(self) -> None:
        port, host, resource, path = self._args
        while not self._closed.wait(STANDBY_S):
            try:
                endpoint = providers.PrometheusEndpoint(port, host, resource,
                                                        multiproc_dir=path)
            except OSError:
                continue  # still held
            except Exception as exc:
                record_internal_error("metrics_port.standby", exc)
                return
            with self._lock:
                if self._closed.is_set():
                    endpoint.close(1000)
                    return
                self._endpoint = endpoint
            logger.warning("ragas-trace: metrics port %s:%d was freed (the process serving "
                           "it exited); this process (pid %d) serves it now, with the "
                           "metrics of every process in PROMETHEUS_MULTIPROC_DIR=%s",
                           endpoint.host, endpoint.port, os.getpid(), path)
            return


MetricsEndpoint = providers.PrometheusEndpoint | Standby


def open_metrics_port(port: int, host: str, resource: Resource,
                      ) -> tuple[MeterProvider, MetricsEndpoint | None]:
    """The meter provider for the scorer's metrics, and the endpoint this process
    serves, or stands by to serve (None where nobody can)."""
    path = _usable_multiproc_dir()
    try:
        endpoint = providers.PrometheusEndpoint(port, host, resource, multiproc_dir=path)
    except OSError as exc:
        if path is not None:
            # WARNING, so that gunicorn's default logging shows it; once per server
            # (the workers of one master), not once per worker.
            level = logging.WARNING if _first_of_server(path, port) else logging.DEBUG
            logger.log(level, "ragas-trace: metrics port %s:%s is taken (%s); this process "
                       "(pid %d) and its sibling workers write their metrics to "
                       "PROMETHEUS_MULTIPROC_DIR=%s, whose merge the process holding the "
                       "port serves; one of them takes the port over when it is freed "
                       "(said once per server)",
                       host, port, exc.strerror or exc, os.getpid(), path)
            return (multiprocess_metrics.MultiprocessMeterProvider(),
                    Standby(port, host, resource, path))
        logger.warning("ragas-trace: metrics port %s:%s cannot be served (%s): this "
                       "process's (pid %d) metrics are not exported. Under a pre-fork "
                       "server, set PROMETHEUS_MULTIPROC_DIR to an empty directory shared "
                       "by the workers (see %s)",
                       host, port, exc.strerror or exc, os.getpid(), GUIDE)
        return NoOpMeterProvider(), None
    if path is not None:
        logger.info("ragas-trace: serving on %s:%d the metrics of every process that "
                    "writes to PROMETHEUS_MULTIPROC_DIR=%s (this one: pid %d)",
                    endpoint.host, endpoint.port, path, os.getpid())
    else:
        _single_process_endpoints.add(endpoint)
    return endpoint.meter_provider, endpoint


def _first_of_server(path: str, port: int) -> bool:
    """Whether this is the first worker of its server (its parent: the master) to find
    ``port`` taken: a marker file per (port, master) in the multiprocess directory;
    markers of masters no longer running are removed."""
    master = os.getppid()
    marker = os.path.join(path, f".ragas-trace-port-{port}-{master}")
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    except OSError:
        return True  # cannot tell: say it
    for old in glob.glob(os.path.join(glob.escape(path), f".ragas-trace-port-{port}-*")):
        pid = old.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != master and not alive(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(old)
    return True


def _usable_multiproc_dir() -> str | None:
    path = multiprocess_metrics.multiproc_dir()
    if path is None:
        return None
    if not os.path.isdir(path):
        logger.warning("ragas-trace: PROMETHEUS_MULTIPROC_DIR=%s is not a directory: "
                       "metrics are served per process (see %s)", path, GUIDE)
        return None
    if not multiprocess_metrics.multiprocess_values_ready():
        logger.warning("ragas-trace: PROMETHEUS_MULTIPROC_DIR was set after "
                       "prometheus_client was imported, which reads it once: metrics are "
                       "served per process (set it in the server's environment)")
        return None
    return path


_single_process_endpoints: weakref.WeakSet[providers.PrometheusEndpoint] = weakref.WeakSet()


def _warn_forked_child() -> None:
    # The child shares the parent's socket but not its serving thread nor, after this
    # point, its counts: what it records never reaches the parent's scrape.
    for endpoint in list(_single_process_endpoints):
        logger.warning("ragas-trace: process %d was forked from the one serving metrics on "
                       "%s:%d; its metrics are not in that scrape. Set "
                       "PROMETHEUS_MULTIPROC_DIR for a pre-fork server (see %s)",
                       os.getpid(), endpoint.host, endpoint.port, GUIDE)
        break
    _single_process_endpoints.clear()


os.register_at_fork(after_in_child=_warn_forked_child)
