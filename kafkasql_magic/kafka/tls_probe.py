"""Why a broker's certificate failed verification, in OpenSSL's words.

librdkafka reports any failed verification as "certificate verify failed: broker certificate
could not be verified, verify that ssl.ca.location is correctly configured", which sends a user
after the CA when the certificate has expired or names another host. One TLS handshake of our
own, with the client's CA, certificate and key, gets OpenSSL's reason."""

from __future__ import annotations

import socket
import ssl
from typing import Mapping


def verify_failure(bootstrap: str, conf: Mapping[str, object], timeout: float = 3.0) -> str | None:
    """OpenSSL's reason for refusing the certificate of the first broker of `bootstrap` under
    the client properties `conf` (e.g. "certificate has expired"); None when it verifies or
    the handshake fails otherwise."""
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    try:
        context = ssl.create_default_context(cafile=conf.get("ssl.ca.location"),
                                             cadata=conf.get("ssl.ca.pem"))
        context.check_hostname = str(conf.get("ssl.endpoint.identification.algorithm", "https")).lower() == "https"
        if conf.get("ssl.certificate.location") and conf.get("ssl.key.location"):
            context.load_cert_chain(str(conf["ssl.certificate.location"]), str(conf["ssl.key.location"]))
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
            with context.wrap_socket(sock, server_hostname=host.strip("[]")):
                return None
    except ssl.SSLCertVerificationError as exc:
        return exc.verify_message
    except (OSError, ValueError, ssl.SSLError):
        return None
