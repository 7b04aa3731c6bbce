"""Shared by the deployment checks (test_deploy_configs.py and the modules it
imports): where deploy/ is, rendering an overlay with `kubectl kustomize`,
and reading the rendered objects."""

import os
import re
import shutil
import subprocess

import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(REPO_ROOT, "deploy")
KUBECTL = os.environ.get("KUBECTL") or shutil.which("kubectl")


def render(overlay):
    path = os.path.join(DEPLOY, "kubernetes", "overlays", overlay)
    r = subprocess.run([KUBECTL, "kustomize", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    if r.returncode != 0:
        raise AssertionError("kubectl kustomize %s failed:\n%s" % (path, r.stderr.decode(errors="replace")))
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def by_kind(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    if len(found) != 1:
        raise AssertionError("expected one %s %s, found %d" % (kind, name or "", len(found)))
    return found[0]


def flag(args, name):
    for a in args:
        if a.startswith("--%s=" % name):
            return a.split("=", 1)[1]
    return None


def pod_selected(selector, pod_labels):
    return all(pod_labels.get(k) == v for k, v in selector.items())


def host_port(text):
    """'name:1234' (or 'dns:///name:1234') -> ('name', 1234)."""
    text = re.sub(r"^dns:(//[^/]*)?/", "", text)
    host, _, port = text.rpartition(":")
    return host, int(port)
