"""What Grafana would send to Prometheus for the shipped dashboard, without Grafana.

Grafana is not packaged in Debian, so tests/e2e/test_grafana_queries.py plays its part: it
reads deploy/grafana/inferd-dashboard.json, resolves the template variables the way Grafana's
Prometheus data source does, and sends every panel's query to a real Prometheus. This module
is the pure half (no process, no network): the panel targets, the variable substitution (which
refuses any variable it does not know, so a typo in the dashboard fails the test instead of
reaching Prometheus as literal text), the `label_values(...)` template queries, and the
prometheus-adapter's metricsQuery templates.

Everything here raises UnknownVariable or ValueError on input it does not understand; nothing
is silently passed through.
"""

import json
import re

# $name, ${name}, ${name:format}, [[name]], [[name:format]]: the forms Grafana interpolates.
VARIABLE_RE = re.compile(r"\$\{(\w+)(?::(\w+))?\}|\[\[(\w+)(?::(\w+))?\]\]|\$(\w+)")
LABEL_VALUES_RE = re.compile(r"^\s*label_values\(\s*(?:(.*),\s*)?(\w+)\s*\)\s*$", re.S)
# The characters Grafana's Prometheus data source escapes in a selected value (the value ends up
# inside a regex, inside a PromQL double-quoted string: hence the doubled backslash).
REGEX_SPECIAL_RE = re.compile(r"([\\^$*+?.()|{}\[\]])")


class UnknownVariable(ValueError):
    """The dashboard names a variable (or a format) the substitution does not know."""


def load_dashboard(path):
    with open(path) as f:
        return json.load(f)


def panels(dashboard):
    """Every panel, rows' nested panels included, in dashboard order."""
    out = []

    def walk(ps):
        for p in ps:
            out.append(p)
            walk(p.get("panels", []))
    walk(dashboard.get("panels", []))
    return out


def targets(dashboard):
    """(panel, target) for every query target of every panel."""
    return [(p, t) for p in panels(dashboard) for t in p.get("targets", []) if "expr" in t]


def is_range_target(panel, target):
    """Grafana runs a range query unless the target asks for an instant one (tables)."""
    if target.get("instant") and not target.get("range"):
        return False
    return True


def template_variables(dashboard):
    return dashboard.get("templating", {}).get("list", [])


def template_query(variable):
    """A query variable's query text (old dashboards store a string, new ones an object)."""
    q = variable.get("query")
    if isinstance(q, dict):
        q = q.get("query")
    return q


def parse_label_values(query):
    """`label_values(selector, label)` or `label_values(label)` -> (selector or None, label)."""
    m = LABEL_VALUES_RE.match(query or "")
    if not m:
        raise ValueError("not a label_values() query this test can run: %r" % query)
    return (m.group(1).strip() if m.group(1) else None), m.group(2)


def regex_escape(value):
    return REGEX_SPECIAL_RE.sub(r"\\\\\1", value)


def format_value(value, fmt=None):
    """A variable's value as Grafana's Prometheus data source writes it into a query.

    ``value`` is a string (one value, or an "All" value used as is) or a list (several values
    selected: a regex alternation of the escaped values)."""
    if fmt not in (None, "regex", "pipe", "raw"):
        raise UnknownVariable("unknown variable format :%s" % fmt)
    if isinstance(value, str):
        return value
    if fmt == "raw":
        return ",".join(value)
    if fmt == "pipe":
        return "|".join(value)
    escaped = [regex_escape(v) for v in value]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


def builtin_values(range_s, interval_s, scrape_interval_s):
    """Grafana's built-in variables for a panel showing the last ``range_s`` seconds with one
    point every ``interval_s`` seconds, over a data source scraped every
    ``scrape_interval_s`` seconds ($__rate_interval: max(interval + scrape, 4 x scrape))."""
    rate = max(interval_s + scrape_interval_s, 4 * scrape_interval_s)
    return {
        "__interval": "%ds" % interval_s,
        "__interval_ms": str(interval_s * 1000),
        "__rate_interval": "%ds" % rate,
        "__range": "%ds" % range_s,
        "__range_s": str(range_s),
        "__range_ms": str(range_s * 1000),
    }


def substitute(text, values):
    """``text`` with every variable replaced by its value from ``values`` (name -> string or
    list of strings); raises UnknownVariable naming the first variable not in ``values``."""
    def repl(m):
        name = m.group(1) or m.group(3) or m.group(5)
        fmt = m.group(2) or m.group(4)
        if name not in values:
            raise UnknownVariable("unknown variable $%s in %r" % (name, text))
        return format_value(values[name], fmt)
    return VARIABLE_RE.sub(repl, text)


# prometheus-adapter (kubernetes-sigs/prometheus-adapter) metricsQuery templates: Go templates
# with these fields. The adapter fills .Series with the series name, .LabelMatchers with the
# matchers of the object or the HPA's selector (none here), .GroupBy with the labels it groups by.
ADAPTER_FIELD_RE = re.compile(r"<<\s*\.(\w+)\s*>>")


def adapter_query(template, series, label_matchers="", group_by=""):
    fields = {"Series": series, "LabelMatchers": label_matchers, "GroupBy": group_by}

    def repl(m):
        if m.group(1) not in fields:
            raise UnknownVariable("unknown adapter template field .%s in %r" % (m.group(1), template))
        return fields[m.group(1)]
    out = ADAPTER_FIELD_RE.sub(repl, template)
    if "<<" in out or ">>" in out:
        raise UnknownVariable("template syntax the test does not handle in %r" % template)
    # An empty matcher list leaves "{}", which PromQL refuses after a name: drop it.
    return out.replace("{}", "")


def adapter_series_name(rule):
    """The series a prometheus-adapter rule serves: its seriesQuery when that is a bare name
    (or a name with matchers)."""
    m = re.match(r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{.*\})?\s*$", rule["seriesQuery"])
    if not m:
        raise ValueError("seriesQuery is not a series selector: %r" % rule["seriesQuery"])
    return m.group(1)
