#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the installer image (see Containerfile) as an OCI image layout tarball, without
podman or buildah: one layer holding /cni-all, a config whose entrypoint is
`/cni-all install /host/opt/cni/bin`, a manifest and index.json, all content-addressed by
sha256. `podman load -i cni-all-oci.tar` or `skopeo copy oci-archive:...` read it.

usage: packaging/build-oci.py STATIC_BINARY OUT.tar [--tag cni-all:VERSION]"""
import argparse
import gzip
import hashlib
import io
import json
import os
import tarfile

p = argparse.ArgumentParser()
p.add_argument("binary")
p.add_argument("out")
p.add_argument("--tag", default="cni-all:latest")
opts = p.parse_args()
EPOCH = 0  # reproducible: fixed timestamps


def blob(data):
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def tar_bytes(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data, mode in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, EPOCH
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


with open(opts.binary, "rb") as f:
    binary = f.read()
layer_tar = tar_bytes([("cni-all", binary, 0o755)])
diff_id, _ = blob(layer_tar)
layer_digest, layer = blob(gzip.compress(layer_tar, mtime=EPOCH))
config = {
    "architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
    "config": {"Entrypoint": ["/cni-all", "install", "/host/opt/cni/bin"], "Labels": {
        "org.opencontainers.image.title": "cni-all", "org.opencontainers.image.licenses": "Apache-2.0"}},
    "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "COPY cni-all /cni-all"}],
}
config_digest, config_bytes = blob(json.dumps(config, sort_keys=True).encode())
manifest = {
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": len(config_bytes)},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_digest, "size": len(layer)}],
}
manifest_digest, manifest_bytes = blob(json.dumps(manifest, sort_keys=True).encode())
index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [{
    "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest, "size": len(manifest_bytes),
    "annotations": {"org.opencontainers.image.ref.name": opts.tag, "io.containerd.image.name": opts.tag}}]}
members = [("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode(), 0o644),
           ("index.json", json.dumps(index, sort_keys=True).encode(), 0o644)]
for digest, data in ((layer_digest, layer), (config_digest, config_bytes), (manifest_digest, manifest_bytes)):
    members.append(("blobs/sha256/" + digest.split(":")[1], data, 0o644))
with open(opts.out + ".tmp", "wb") as f:
    f.write(tar_bytes(members))
os.replace(opts.out + ".tmp", opts.out)
print(f"{opts.out}: {opts.tag}, manifest {manifest_digest}, {len(layer)} byte layer")
