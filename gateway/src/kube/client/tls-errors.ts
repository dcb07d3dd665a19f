// OpenSSL's words for a failed handshake ("unable to verify the first
// certificate", "self-signed certificate in certificate chain") say what broke
// but not where to look. These sentences name the server and what to check.

const CA = "the CA probegate trusts (the kubeconfig's certificate-authority, or the service account's ca.crt in a pod)";

const SENTENCES: Record<string, (server: string, host: string) => string> = {
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: (s) => `the API server at ${s} presented a certificate that ${CA} did not sign: check that it is this cluster's CA`,
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: (s) => `the API server at ${s} presented a certificate whose issuer is not ${CA}: check that it is this cluster's CA`,
  UNABLE_TO_GET_ISSUER_CERT: (s) => `the API server at ${s} presented a certificate whose issuer is not ${CA}: check that it is this cluster's CA`,
  SELF_SIGNED_CERT_IN_CHAIN: (s) => `the API server at ${s} presented a chain ending in a self-signed CA that is not ${CA}: check that the kubeconfig names this cluster's CA`,
  DEPTH_ZERO_SELF_SIGNED_CERT: (s) => `the API server at ${s} presented a self-signed certificate that is not ${CA}: give that certificate as the certificate-authority, or check the server URL`,
  CERT_HAS_EXPIRED: (s) => `the API server at ${s} presented an expired certificate: check the server's certificate rotation, and this node's clock`,
  CERT_NOT_YET_VALID: (s) => `the API server at ${s} presented a certificate that is not valid yet: check this node's clock`,
  ERR_TLS_CERT_ALTNAME_INVALID: (s, name) => `the certificate of the API server at ${s} does not name ${name}: use a server address it was issued for in the kubeconfig, or set tls-server-name to one of its names`,
  ERR_SSL_WRONG_VERSION_NUMBER: (s) => `${s} did not answer with TLS: check the server URL's scheme (http:// or https://) and port`,
  ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: (s) => `the API server at ${s} asked for a client certificate and got none: check the kubeconfig's client-certificate and client-key`,
  ERR_SSL_TLSV1_ALERT_UNKNOWN_CA: (s) => `the API server at ${s} does not trust probegate's client certificate: check that the kubeconfig's client-certificate was issued by this cluster's client CA`,
  ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE: (s) => `the API server at ${s} refused probegate's client certificate: check the kubeconfig's client-certificate and client-key`,
};

/**
 * A sentence for a TLS failure code (the code itself appended, for searching),
 * or undefined when it is not a TLS failure known here. serverName is the name
 * the certificate is checked against (tls-server-name, else the URL's host).
 */
export function tlsFailureSentence(code: string, server: URL, serverName = server.hostname): string | undefined {
  const sentence = SENTENCES[code];
  return sentence ? `${sentence(server.origin, serverName)} (${code})` : undefined;
}
