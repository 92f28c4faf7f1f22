"""The alert rules' links to the failing traces: Prometheus annotation templates that
open, for the alert's ``service``, the traces whose root the judge failed on
faithfulness (``ragas.faithfulness.label = fail``) over the alert's longest window,
in Jaeger's search and in Grafana's Explore on Tempo (TraceQL).

The shipped rules (``deploy/prometheus/rules/ragas-alerts.yml``) hold them for the
compose stack's URLs (``deploy/docker-compose.yml``); ``ragas-trace alerts rules``
prints the rules with the links built for yours (a test keeps the shipped file equal
to ``render_rules`` with the defaults)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import quote, quote_plus, urlsplit

DEFAULT_JAEGER_URL = "http://localhost:16686"
DEFAULT_GRAFANA_URL = "http://localhost:3000"
DEFAULT_TEMPO_UID = "tempo"
# The annotations that hold a link, and the lookback each alert's link reads: its
# longest window (a drop or a fail share is measured over up to 2 hours).
LINK_ANNOTATIONS = ("traces_jaeger", "traces_tempo")
_LOOKBACK = re.compile(r"lookback=(\w+)|now-(\w+)")


@dataclass(frozen=True)
class TraceBackends:
    jaeger_url: str = DEFAULT_JAEGER_URL
    grafana_url: str = DEFAULT_GRAFANA_URL
    tempo_uid: str = DEFAULT_TEMPO_UID

    def __post_init__(self) -> None:
        for name in ("jaeger_url", "grafana_url"):
            url = getattr(self, name)
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"{name}: expected an http(s) URL, got {url!r}")
        if not re.fullmatch(r"[\w.-]+", self.tempo_uid):
            raise ValueError(f"tempo_uid: expected a Grafana data source uid, got "
                             f"{self.tempo_uid!r}")

    def jaeger(self, lookback: str) -> str:
        """Jaeger's search: the service's traces with a failing faithfulness label."""
        tags = quote('{"ragas.faithfulness.label":"fail"}', safe="")
        return (f"{self.jaeger_url.rstrip('/')}/search?service={{{{ $labels.service "
                f"| urlquery }}}}&tags={tags}&lookback={lookback}&limit=100")

    def tempo(self, lookback: str) -> str:
        """Grafana Explore on Tempo, TraceQL ``{ span.ragas.faithfulness.label = "fail" }``
        on the service (Go's ``urlquery`` encodes the pane once the service is in)."""
        pane = ('{\\"datasource\\":\\"' + self.tempo_uid + '\\",\\"queries\\":[{\\"refId\\":'
                '\\"A\\",\\"queryType\\":\\"traceql\\",\\"query\\":\\"{ resource.service.name'
                ' = \\\\\\"%s\\\\\\" && span.ragas.faithfulness.label = \\\\\\"fail\\\\\\" }\\"'
                '}],\\"range\\":{\\"from\\":\\"now-' + lookback + '\\",\\"to\\":\\"now\\"}}')
        return (f"{self.grafana_url.rstrip('/')}/explore?left="
                f'{{{{ printf "{pane}" $labels.service | urlquery }}}}')

    def links(self, lookback: str) -> dict[str, str]:
        """The annotation templates, as the rules file holds them."""
        return {"traces_jaeger": self.jaeger(lookback), "traces_tempo": self.tempo(lookback)}

    def expanded(self, service: str, lookback: str) -> dict[str, str]:
        """The links as Prometheus expands the templates for ``service`` (what
        ``ragas-trace alerts links`` prints)."""
        tags = quote('{"ragas.faithfulness.label":"fail"}', safe="")
        query = (f'{{ resource.service.name = "{service}" && '
                 f'span.ragas.faithfulness.label = "fail" }}')
        pane = json.dumps({"datasource": self.tempo_uid,
                           "queries": [{"refId": "A", "queryType": "traceql", "query": query}],
                           "range": {"from": f"now-{lookback}", "to": "now"}},
                          separators=(",", ":"))
        return {"traces_jaeger": f"{self.jaeger_url.rstrip('/')}/search?service="
                                 f"{quote_plus(service)}&tags={tags}&lookback={lookback}"
                                 f"&limit=100",
                "traces_tempo": f"{self.grafana_url.rstrip('/')}/explore?left="
                                f"{quote_plus(pane)}"}


def render_rules(shipped: str, backends: TraceBackends) -> str:
    """``shipped`` (the rules with the default links) with every link built for
    ``backends`` instead; the rest byte for byte."""
    default = TraceBackends()
    out = shipped
    for lookback in sorted(set(_lookbacks(shipped))):
        for name, link in default.links(lookback).items():
            out = out.replace(_yaml_quoted(link), _yaml_quoted(backends.links(lookback)[name]))
    return out


def _lookbacks(text: str) -> list[str]:
    return [a or b for a, b in _LOOKBACK.findall(text)]


def _yaml_quoted(link: str) -> str:
    """How the rules file writes a link: single-quoted YAML."""
    return "'" + link.replace("'", "''") + "'"
