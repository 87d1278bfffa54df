"""The official Kubernetes Python client (Debian's python3-kubernetes) as a
second independent client of the simulated API server. Each check prints
"OK <name>"; the first that fails prints "FAIL <name>: <why>" and exits 1.
Usage: official_python_client.py KUBECONFIG
"""
import sys

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "default"


def pod(name):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def check(name, ok, why=""):
    if not ok:
        print(f"FAIL {name}: {why}")
        sys.exit(1)
    print(f"OK {name}")


def main():
    config.load_kube_config(config_file=sys.argv[1])
    v1 = client.CoreV1Api()

    v1.create_namespaced_pod(NS, pod("a"))
    listed = v1.list_namespaced_pod(NS)
    names = [p.metadata.name for p in listed.items]
    check("list", names == ["a"], names)
    listed_at = listed.metadata.resource_version

    # From now: the existing pod as ADDED, then what changes. The client
    # sends watch=True; a server that took only "true" answered a list.
    seen = []
    w = watch.Watch()
    for event in w.stream(v1.list_namespaced_pod, NS, timeout_seconds=20):
        seen.append((event["type"], event["object"].metadata.name))
        if event["object"].metadata.name == "a":
            v1.create_namespaced_pod(NS, pod("b"))
        if event["object"].metadata.name == "b":
            w.stop()
    check("watch from now", seen == [("ADDED", "a"), ("ADDED", "b")], seen)

    # From a resourceVersion: only what came after it.
    seen = []
    w = watch.Watch()
    for event in w.stream(v1.list_namespaced_pod, NS, resource_version=listed_at,
                          timeout_seconds=20):
        seen.append((event["type"], event["object"].metadata.name))
        w.stop()
    check("watch from a resourceVersion", seen == [("ADDED", "b")], seen)

    current = v1.read_namespaced_pod("a", NS)
    stale = current.metadata.resource_version
    current.metadata.labels = {"step": "1"}
    v1.replace_namespaced_pod("a", NS, current)
    current.metadata.resource_version = stale
    current.metadata.labels = {"step": "2"}
    try:
        v1.replace_namespaced_pod("a", NS, current)
        check("409 on a stale update", False, "the stale update was accepted")
    except ApiException as e:
        check("409 on a stale update", e.status == 409, f"{e.status} {e.reason}")

    try:
        v1.create_namespaced_pod(NS, pod("Not_A_Name"))
        check("422 on an invalid object", False, "the invalid pod was created")
    except ApiException as e:
        check("422 on an invalid object", e.status == 422, f"{e.status} {e.reason}")


if __name__ == "__main__":
    main()
