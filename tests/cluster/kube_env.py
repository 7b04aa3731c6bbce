"""What the kubelet does with a container's environment and its $(VAR)
references, so that tests can run a rendered container's command line outside
Kubernetes exactly as a pod would.

- ``container_environment(container, config_maps, secrets)``: the variables a
  container gets (kubelet's makeEnvironmentVariables, pkg/kubelet/kubelet_pods.go):
  every key of each ``envFrom`` source in order (a later source overrides an
  earlier one; a key that is not a valid variable name is skipped; ``prefix``
  prepended), then each ``env`` entry in order, its ``value`` expanded against
  the variables so far. ``envFrom`` variables are therefore part of the
  environment that args and later env values are expanded with.
- ``expand(text, env)``: Kubernetes' $(VAR) expansion (third_party/forked/golang/
  expansion/expand.go): ``$(VAR)`` becomes VAR's value when VAR is defined and
  stays ``$(VAR)`` when it is not; ``$$`` becomes ``$`` (so ``$$(VAR)`` gives the
  literal ``$(VAR)``); ``$`` before any other character, an unterminated ``$(``
  and a final ``$`` stay as they are.
- ``expand_args(container, env)``: command and args as the kubelet passes them
  to the runtime (ExpandContainerCommandAndArgs).
"""

import re

ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")   # IsEnvVarName


def expand(text, env):
    out = []
    checkpoint = 0
    cursor = 0
    n = len(text)
    while cursor < n:
        if text[cursor] == "$" and cursor + 1 < n:
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1:]
            if rest[0] == "$":              # escaped operator
                out.append("$")
                advance = 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close < 0:                # incomplete reference: kept
                    out.append("$(")
                    advance = 1
                else:
                    name = rest[1:close]
                    out.append(env[name] if name in env else "$(%s)" % name)
                    advance = close + 1
            else:                            # a lone operator: kept with its next character
                out.append("$" + rest[0])
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)


def container_environment(container, config_maps=None, secrets=None):
    """{name: value} for `container`; config_maps / secrets: {name: {key: value}}
    (Secret values already decoded). A missing, non-optional source raises
    KeyError, as the kubelet refuses to start the container."""
    config_maps, secrets = config_maps or {}, secrets or {}
    env = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            ref, store = source["configMapRef"], config_maps
        else:
            ref, store = source["secretRef"], secrets
        if ref["name"] not in store:
            if ref.get("optional"):
                continue
            raise KeyError("%s %s does not exist" % ("ConfigMap" if store is config_maps else "Secret", ref["name"]))
        for key, value in store[ref["name"]].items():
            key = source.get("prefix", "") + key
            if ENV_NAME.match(key):
                env[key] = value
    for e in container.get("env", []):
        if "valueFrom" in e:
            raise NotImplementedError("valueFrom is not resolved here: %s" % e["name"])
        env[e["name"]] = expand(e.get("value", ""), env)
    return env


def expand_args(container, env):
    """(command, args) with $(VAR) references expanded as the kubelet does."""
    return ([expand(a, env) for a in container.get("command", [])],
            [expand(a, env) for a in container.get("args", [])])


def references(texts):
    """The variable names referenced as $(VAR) (not $$-escaped) in `texts`."""
    names = set()
    for t in texts:
        # Expanding with a recorder finds exactly the references the kubelet resolves.
        class Recorder(dict):
            def __contains__(self, name):
                names.add(name)
                return False
        expand(t, Recorder())
    return names
