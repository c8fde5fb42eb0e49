#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the installer image (see Containerfile) as an OCI image layout tarball, without
podman or buildah: per static binary given (amd64, arm64: told apart by their ELF headers), one
layer holding /cni-all, a config whose entrypoint is `/cni-all install /host/opt/cni/bin` and a
manifest; the manifests are listed, each with its platform, by one image index, which index.json
names with the tag. All content-addressed by sha256 and dated 1970, so the same binaries give
the same tarball. `podman load -i cni-all-oci.tar` takes the machine's platform from it;
`skopeo copy --all oci-archive:...` copies every platform.

usage: packaging/build-oci.py STATIC_BINARY [STATIC_BINARY ...] OUT.tar [--tag cni-all:VERSION]"""
import argparse
import gzip
import hashlib
import io
import json
import os
import struct
import sys
import tarfile

p = argparse.ArgumentParser()
p.add_argument("binaries", nargs="+")
p.add_argument("out")
p.add_argument("--tag", default="cni-all:latest")
opts = p.parse_args()
EPOCH = 0  # reproducible: fixed timestamps
ARCHES = {62: "amd64", 183: "arm64"}  # ELF e_machine: EM_X86_64, EM_AARCH64


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


def architecture(binary):
    """The OCI architecture of a little-endian 64-bit ELF executable."""
    if binary[:6] != b"\x7fELF\x02\x01":
        sys.exit("build-oci.py: not a 64-bit little-endian ELF file")
    machine = struct.unpack_from("<H", binary, 18)[0]
    if machine not in ARCHES:
        sys.exit(f"build-oci.py: no image is made for ELF machine {machine}")
    return ARCHES[machine]


blobs = []  # (digest, data) of every layer, config and manifest


def image(binary):
    """One platform's manifest: its descriptor, which the image index lists."""
    arch = architecture(binary)
    layer_tar = tar_bytes([("cni-all", binary, 0o755)])
    diff_id, _ = blob(layer_tar)
    layer_digest, layer = blob(gzip.compress(layer_tar, mtime=EPOCH))
    config = {
        "architecture": arch, "os": "linux", "created": "1970-01-01T00:00:00Z",
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
    blobs.extend([(layer_digest, layer), (config_digest, config_bytes), (manifest_digest, manifest_bytes)])
    return {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest,
            "size": len(manifest_bytes), "platform": {"architecture": arch, "os": "linux"}}


manifests = []
for path in opts.binaries:
    with open(path, "rb") as f:
        manifests.append(image(f.read()))
arches = [m["platform"]["architecture"] for m in manifests]
if len(set(arches)) != len(arches):
    sys.exit(f"build-oci.py: one binary per architecture, got {', '.join(arches)}")
manifests.sort(key=lambda m: m["platform"]["architecture"])
image_index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests}
index_digest, index_bytes = blob(json.dumps(image_index, sort_keys=True).encode())
blobs.append((index_digest, index_bytes))
layout_index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [{
    "mediaType": "application/vnd.oci.image.index.v1+json", "digest": index_digest, "size": len(index_bytes),
    "annotations": {"org.opencontainers.image.ref.name": opts.tag, "io.containerd.image.name": opts.tag}}]}
members = [("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode(), 0o644),
           ("index.json", json.dumps(layout_index, sort_keys=True).encode(), 0o644)]
for digest, data in sorted(blobs):
    members.append(("blobs/sha256/" + digest.split(":")[1], data, 0o644))
with open(opts.out + ".tmp", "wb") as f:
    f.write(tar_bytes(members))
os.replace(opts.out + ".tmp", opts.out)
print(f"{opts.out}: {opts.tag}, image index {index_digest} for {', '.join(sorted(arches))}")
