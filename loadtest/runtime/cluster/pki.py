"""The cluster's certificates and the kubeconfig that carries them.

One CA signs everything; clients authenticate with certificates only (no tokens), as cluster admin.
"""
from __future__ import annotations

import base64
import json
import ssl
import subprocess
from pathlib import Path


def make_certificates(pki: Path, service_ip: str) -> None:
    """A CA, the apiserver's serving cert for 127.0.0.1 and for the `kubernetes` Service at `service_ip` (the
    first address of the Service range), an admin client cert (system:masters), a token signing key."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=pki, check=True, capture_output=True)

    def config(name: str, subject: dict[str, str], extensions: str) -> str:
        path = pki / f"{name}.cnf"
        dn = "\n".join(f"{k} = {v}" for k, v in subject.items())
        path.write_text(f"[req]\nprompt = no\ndistinguished_name = dn\n[dn]\n{dn}\n[ext]\n{extensions}\n")
        return str(path)

    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650", "-extensions", "ext",
            "-config", config("ca", {"CN": "loadtest-local-ca"},
                              "basicConstraints = critical, CA:TRUE\nkeyUsage = critical, keyCertSign, cRLSign"))
    leaf = "basicConstraints = critical, CA:FALSE\nkeyUsage = critical, digitalSignature, keyEncipherment\n"
    openssl("req", "-x509", *key, "-CA", "ca.crt", "-CAkey", "ca.key", "-keyout", "apiserver.key",
            "-out", "apiserver.crt", "-days", "3650", "-extensions", "ext",
            "-config", config("apiserver", {"CN": "kube-apiserver"},
                              leaf + "extendedKeyUsage = serverAuth\nsubjectAltName = IP:127.0.0.1, DNS:localhost, "
                              f"DNS:kubernetes, DNS:kubernetes.default.svc, IP:{service_ip}"))
    openssl("req", "-x509", *key, "-CA", "ca.crt", "-CAkey", "ca.key", "-keyout", "admin.key",
            "-out", "admin.crt", "-days", "3650", "-extensions", "ext",
            "-config", config("admin", {"O": "system:masters", "CN": "admin"}, leaf + "extendedKeyUsage = clientAuth"))
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "service-account.key")
    openssl("pkey", "-in", "service-account.key", "-pubout", "-out", "service-account.pub")


def admin_context(pki: Path) -> ssl.SSLContext:
    """TLS as cluster admin: trusts the cluster's CA, presents the admin client certificate."""
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(pki / "admin.crt", pki / "admin.key")
    return context


def write_kubeconfig(kubeconfig: Path, server: str, pki: Path) -> None:
    """A kubeconfig for `server` as admin, with the certificates inline (it stays valid if the pki dir moves)."""
    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "loadtest-local",
        "clusters": [{"name": "loadtest-local",
                      "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")}}],
        "users": [{"name": "admin",
                   "user": {"client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key")}}],
        "contexts": [{"name": "loadtest-local", "context": {"cluster": "loadtest-local", "user": "admin"}}],
    }
    kubeconfig.write_text(json.dumps(config, indent=2))
    kubeconfig.chmod(0o600)
