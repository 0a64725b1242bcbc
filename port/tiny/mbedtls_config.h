/*
 * mbedtls_config.h - mote's minimal mbedTLS configuration for the smallest
 * static builds (make tiny): a TLS 1.2 client with ECDHE and AES-GCM,
 * session resumption (tickets and ids) and ALPN
 * (ChaCha20-Poly1305 left out: every API front end offers AES-GCM, and
 * CTR_DRBG needs AES anyway), X.509 verification with trusted roots handed over as
 * the chain asks for them (MBEDTLS_X509_TRUSTED_CERTIFICATE_CALLBACK: the
 * system bundle is never loaded whole), and every allocation from a fixed
 * arena (MBEDTLS_MEMORY_BUFFER_ALLOC_C) so TLS memory is bounded.
 *
 * Left out on purpose: file I/O (mote reads roots through its port),
 * error and certificate-info strings (port/tls_mbedtls.c names the few
 * that matter), RSA-PSS
 * (TLS 1.2 does not sign with it; roots signed with it are rare),
 * max_fragment_length (unused), keeping the peer's certificate after the
 * handshake, and SHA-1: the 24 roots of Debian's bundle that signed
 * themselves with it are parsed under the name of SHA-256
 * (mote_roots_sha1_as_sha256: a root's own signature is never checked);
 * a SHA-1 signature in a chain cannot be checked at all, so it is refused
 * as before.
 */
#ifndef MOTE_MBEDTLS_CONFIG_H
#define MOTE_MBEDTLS_CONFIG_H

#define MBEDTLS_HAVE_ASM
#define MBEDTLS_HAVE_TIME
#define MBEDTLS_HAVE_TIME_DATE
#define MBEDTLS_PLATFORM_C
#define MBEDTLS_PLATFORM_MEMORY
#define MBEDTLS_MEMORY_BUFFER_ALLOC_C
/* Before the arena is set up nothing allocates: these defaults (in
 * port/tls_mbedtls.c) keep the C library's malloc out of the binary. */
#include <stddef.h>
void *mote_tls_calloc_none(size_t n, size_t size);
void mote_tls_free_none(void *p);
#define MBEDTLS_PLATFORM_STD_CALLOC mote_tls_calloc_none
#define MBEDTLS_PLATFORM_STD_FREE mote_tls_free_none
#define MBEDTLS_SSL_TLS_C
#define MBEDTLS_SSL_CLI_C
#define MBEDTLS_SSL_PROTO_TLS1_2
#define MBEDTLS_SSL_SERVER_NAME_INDICATION
/* resumption (RFC 5077 tickets; session ids need nothing more) and ALPN
 * http/1.1: a kept session makes the next run's handshake one round trip
 * without the ECDHE and signature work */
#define MBEDTLS_SSL_SESSION_TICKETS
#define MBEDTLS_SSL_ALPN
#define MBEDTLS_SSL_EXTENDED_MASTER_SECRET
#define MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED
#define MBEDTLS_KEY_EXCHANGE_ECDHE_RSA_ENABLED
#define MBEDTLS_CIPHER_C
#define MBEDTLS_AES_C
#define MBEDTLS_AES_ROM_TABLES
#define MBEDTLS_AES_FEWER_TABLES
#define MBEDTLS_GCM_C
#define MBEDTLS_MD_C
#define MBEDTLS_SHA256_C
#define MBEDTLS_SHA256_SMALLER
#define MBEDTLS_SHA512_C
#define MBEDTLS_SHA512_SMALLER
#define MBEDTLS_CTR_DRBG_C
#define MBEDTLS_ENTROPY_C
#define MBEDTLS_BIGNUM_C
#define MBEDTLS_ECP_C
#define MBEDTLS_ECP_NIST_OPTIM
#define MBEDTLS_ECP_DP_SECP256R1_ENABLED
#define MBEDTLS_ECP_DP_SECP384R1_ENABLED
#define MBEDTLS_ECDH_C
#define MBEDTLS_ECDSA_C
#define MBEDTLS_RSA_C
#define MBEDTLS_PKCS1_V15
#define MBEDTLS_PK_C
#define MBEDTLS_PK_PARSE_C
#define MBEDTLS_ASN1_PARSE_C
#define MBEDTLS_ASN1_WRITE_C
#define MBEDTLS_OID_C
#define MBEDTLS_BASE64_C
#define MBEDTLS_PEM_PARSE_C
#define MBEDTLS_X509_USE_C
#define MBEDTLS_X509_CRT_PARSE_C
#define MBEDTLS_X509_TRUSTED_CERTIFICATE_CALLBACK
#define MBEDTLS_X509_REMOVE_INFO

#define MBEDTLS_MPI_MAX_SIZE 512
/* 4, not 2: a turn's handshake (two P-256 verifications) takes 7% fewer
 * instructions for 1 KB of code and a few hundred bytes of arena. With it,
 * P-256 key exchange costs 3% more than X25519, which is left out (3.6 KB
 * of code; every server offers P-256). docs/BENCHMARKS.md */
#define MBEDTLS_ECP_WINDOW_SIZE 4
#define MBEDTLS_ECP_FIXED_POINT_OPTIM 0
#define MBEDTLS_SSL_IN_CONTENT_LEN 16384
#define MBEDTLS_SSL_OUT_CONTENT_LEN 4096

#include "mbedtls/check_config.h"

#endif
