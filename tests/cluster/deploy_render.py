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


# kustomize `kind: Component` (and `components:` in a kustomization) arrived in
# kustomize v3.7; kubectl embeds kustomize, so an old kubectl (Debian 12's
# kubernetes-client 1.20 embeds v2.0.3) renders the v2-style overlays but not
# anything that uses a component. Tests that render a component skip with this.
COMPONENTS_MIN_KUSTOMIZE = (3, 7, 0)


def kustomize_version():
    """The kustomize version embedded in kubectl, as a tuple of ints, or None
    when kubectl is missing or does not say (very old kubectl prints no
    "Kustomize Version" line)."""
    if not KUBECTL:
        return None
    try:
        r = subprocess.run([KUBECTL, "version", "--client"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Kustomize Version:\s*v?(\d+)\.(\d+)\.(\d+)", r.stdout.decode(errors="replace"))
    return tuple(int(x) for x in m.groups()) if m else None


def kustomize_supports_components():
    """(True, "") when kubectl's kustomize can render `kind: Component`;
    otherwise (False, reason) with the reason a test should skip with."""
    v = kustomize_version()
    if v is None:
        return False, ("kubectl (%s) reports no \"Kustomize Version\"; kustomize components need "
                       "kustomize >= v3.7 (kubectl >= 1.21)" % (KUBECTL or "not found"))
    if v < COMPONENTS_MIN_KUSTOMIZE:
        return False, ("kubectl's kustomize is v%d.%d.%d; kustomize components need >= v3.7 "
                       "(kubectl >= 1.21; Debian 12's kubernetes-client 1.20 embeds v2.0.3)" % v)
    return True, ""


def render_path(path):
    """Render any kustomization directory; returns the list of objects."""
    r = subprocess.run([KUBECTL, "kustomize", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    if r.returncode != 0:
        raise AssertionError("kubectl kustomize %s failed:\n%s" % (path, r.stderr.decode(errors="replace")))
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def render(overlay):
    return render_path(os.path.join(DEPLOY, "kubernetes", "overlays", overlay))


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
