# SPDX-License-Identifier: Apache-2.0
"""A minimal client of the Kubernetes CRI (runtime.v1), the gRPC API kubelet speaks to containerd:
the protobuf wire format written by hand for the few messages the cri suite sends and reads, and
Debian's python3-grpcio carrying them as raw bytes, so no generated code or protoc is needed.
Field numbers are those of runtime.v1's api.proto. Only what tests/cri/test_cri.py uses is here:
Status, RunPodSandbox, PodSandboxStatus, StopPodSandbox, RemovePodSandbox, CreateContainer,
StartContainer and ListPodSandbox."""
import json

import grpc


# --- protobuf wire format: varints (type 0) and length-delimited fields (type 2) ---------------

def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def integer(field, value):
    return _varint(field << 3) + _varint(value) if value else b""


def string(field, value):
    data = value if isinstance(value, bytes) else value.encode()
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def message(field, body):
    return string(field, body)


def string_map(field, mapping):
    return b"".join(message(field, string(1, k) + string(2, v)) for k, v in mapping.items())


def decode(data):
    """A message's fields as {number: [value, ...]}: ints for varints, bytes for the rest."""
    fields, i = {}, 0

    def varint():
        nonlocal i
        value = shift = 0
        while True:
            byte = data[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value
    while i < len(data):
        key = varint()
        number, kind = key >> 3, key & 7
        if kind == 0:
            value = varint()
        elif kind == 2:
            size = varint()
            value, i = data[i:i + size], i + size
        elif kind == 1:
            value, i = data[i:i + 8], i + 8
        elif kind == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"protobuf wire type {kind} is not read here")
        fields.setdefault(number, []).append(value)
    return fields


def first(fields, number, default=None):
    return fields.get(number, [default])[0]


def text(fields, number):
    return first(fields, number, b"").decode()


def decode_map(entries):
    out = {}
    for entry in entries:
        kv = decode(entry)
        out[text(kv, 1)] = text(kv, 2)
    return out


# --- runtime.v1 ------------------------------------------------------------------------------

PROTOCOLS = {"TCP": 0, "UDP": 1, "SCTP": 2}


def pod_sandbox_config(name, uid, cgroup_parent, namespace="default", port_mappings=(), annotations=None):
    """PodSandboxConfig: metadata(1){name 1, uid 2, namespace 3}, hostname(2), port_mappings(5)
    {protocol 1, container_port 2, host_port 3, host_ip 4}, annotations(7),
    linux(8){cgroup_parent 1}. The network namespace is the pod's own (the default)."""
    body = message(1, string(1, name) + string(2, uid) + string(3, namespace))
    body += string(2, name)
    for pm in port_mappings:
        body += message(5, integer(1, PROTOCOLS[pm.get("protocol", "TCP")]) + integer(2, pm["container_port"])
                        + integer(3, pm["host_port"]) + (string(4, pm["host_ip"]) if pm.get("host_ip") else b""))
    body += string_map(7, annotations or {})
    body += message(8, string(1, cgroup_parent))
    return body


class Runtime:
    """runtime.v1.RuntimeService on a containerd socket."""

    def __init__(self, socket, timeout=120):
        self.channel = grpc.insecure_channel(f"unix://{socket}")
        self.timeout = timeout

    def close(self):
        self.channel.close()

    def _call(self, method, body, service="RuntimeService"):
        rpc = self.channel.unary_unary(f"/runtime.v1.{service}/{method}")
        return decode(rpc(body, timeout=self.timeout))

    def wait_ready(self, seconds=30):
        grpc.channel_ready_future(self.channel).result(timeout=seconds)

    def version(self):
        r = self._call("Version", string(1, "v1"))
        return {"runtime_name": text(r, 2), "runtime_version": text(r, 3), "runtime_api_version": text(r, 4)}

    def conditions(self):
        """Status: {condition type: (status, reason, message)}."""
        status = decode(first(self._call("Status", b""), 1, b""))
        out = {}
        for c in status.get(1, []):
            c = decode(c)
            out[text(c, 1)] = (bool(first(c, 2, 0)), text(c, 3), text(c, 4))
        return out

    def run_pod_sandbox(self, config):
        return text(self._call("RunPodSandbox", message(1, config)), 1)

    def pod_sandbox_status(self, pod_id):
        """state (0 ready, 1 not ready), ip, additional ips and the verbose info (parsed JSON)."""
        r = self._call("PodSandboxStatus", string(1, pod_id) + integer(2, 1))
        status = decode(first(r, 1, b""))
        network = decode(first(status, 5, b""))
        info = decode_map(r.get(2, []))
        return {"state": first(status, 3, 0), "ip": text(network, 1),
                "additional_ips": [text(decode(x), 1) for x in network.get(2, [])],
                "info": json.loads(info["info"]) if "info" in info else {}}

    def stop_pod_sandbox(self, pod_id):
        self._call("StopPodSandbox", string(1, pod_id))

    def remove_pod_sandbox(self, pod_id):
        self._call("RemovePodSandbox", string(1, pod_id))

    def list_pod_sandbox_ids(self):
        return [text(decode(item), 1) for item in self._call("ListPodSandbox", b"").get(1, [])]

    def create_container(self, pod_id, sandbox_config, name, image, command):
        """ContainerConfig: metadata(1){name 1}, image(2){image 1}, command(3)."""
        config = message(1, string(1, name)) + message(2, string(1, image))
        config += b"".join(string(3, c) for c in command)
        return text(self._call("CreateContainer", string(1, pod_id) + message(2, config) + message(3, sandbox_config)), 1)

    def start_container(self, container_id):
        self._call("StartContainer", string(1, container_id))
