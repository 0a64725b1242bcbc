/*
 * tls_sign.c - ES256 signatures with mbedTLS (mote_tls_sign_es256): a
 * client's assertion for an authorization server (private_key_jwt, RFC
 * 7523), signed with an EC P-256 key. Its own random generator (seeded
 * from the library's entropy sources once), so nothing here touches the
 * sessions of tls_mbedtls.c. A library built without ECDSA or the P-256
 * curve says so.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <mbedtls/version.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>
#if MBEDTLS_VERSION_MAJOR >= 3
#include <psa/crypto.h>
#endif

#include "mote/mote_err.h"
#include "mote/mote_tls.h"

#if defined(MBEDTLS_ECDSA_C) && defined(MBEDTLS_PK_PARSE_C) && \
    defined(MBEDTLS_ECP_DP_SECP256R1_ENABLED) && defined(MBEDTLS_CTR_DRBG_C) && \
    defined(MBEDTLS_ENTROPY_C)
#define CAN_SIGN 1
#else
#define CAN_SIGN 0
#endif

#if CAN_SIGN
static mbedtls_entropy_context entropy;
static mbedtls_ctr_drbg_context drbg;
static bool seeded;

/* One DER INTEGER at *p (before e) into 32 bytes, big-endian: false when
 * it is not one or is longer. */
static bool der_int(const unsigned char **p, const unsigned char *e, uint8_t out[32])
{
    size_t n;

    if (e - *p < 2 || (*p)[0] != 0x02 || (*p)[1] > e - *p - 2)
        return false;
    n = (*p)[1];
    *p += 2;
    while (n > 0 && **p == 0)
        (*p)++, n--;
    if (n > 32)
        return false;
    memset(out, 0, 32 - n);
    memcpy(out + 32 - n, *p, n);
    *p += n;
    return true;
}
#endif

int mote_tls_sign_es256(const void *key, size_t len, const uint8_t hash[32], uint8_t sig[64],
                        char *err, size_t cap)
{
#if CAN_SIGN
    static mbedtls_pk_context pk;
    unsigned char der[MBEDTLS_ECDSA_MAX_LEN];
    const unsigned char *p = der, *e;
    size_t n = 0;
    int rc;

    if (!seeded) {
#if MBEDTLS_VERSION_MAJOR >= 3
        if (psa_crypto_init() != PSA_SUCCESS) {
            snprintf(err, cap, "PSA crypto init failed");
            return MOTE_ERR_TLS;
        }
#endif
        mbedtls_entropy_init(&entropy);
        mbedtls_ctr_drbg_init(&drbg);
        if ((rc = mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy,
                                        (const unsigned char *)"mote-sign", 9)) != 0) {
            snprintf(err, cap, "no random generator for signing (mbedTLS -0x%04x)",
                     (unsigned)-rc);
            return MOTE_ERR_TLS;
        }
        seeded = true;
    }
    mbedtls_pk_init(&pk);
#if MBEDTLS_VERSION_MAJOR >= 3
    rc = mbedtls_pk_parse_key(&pk, key, len, NULL, 0, mbedtls_ctr_drbg_random, &drbg);
#else
    rc = mbedtls_pk_parse_key(&pk, key, len, NULL, 0);
#endif
    if (rc != 0) {
        snprintf(err, cap, "the private key is not an unencrypted PEM or DER key (mbedTLS "
                           "-0x%04x)", (unsigned)-rc);
        mbedtls_pk_free(&pk);
        return MOTE_ERR_INVAL;
    }
    if (!mbedtls_pk_can_do(&pk, MBEDTLS_PK_ECDSA) || mbedtls_pk_get_bitlen(&pk) != 256) {
        snprintf(err, cap, "the private key is not an EC P-256 key (ES256)");
        mbedtls_pk_free(&pk);
        return MOTE_ERR_INVAL;
    }
#if MBEDTLS_VERSION_MAJOR >= 3
    rc = mbedtls_pk_sign(&pk, MBEDTLS_MD_SHA256, hash, 32, der, sizeof(der), &n,
                         mbedtls_ctr_drbg_random, &drbg);
#else
    rc = mbedtls_pk_sign(&pk, MBEDTLS_MD_SHA256, hash, 32, der, &n, mbedtls_ctr_drbg_random,
                         &drbg);
#endif
    mbedtls_pk_free(&pk); /* (zeroised by mbedTLS) */
    if (rc != 0) {
        snprintf(err, cap, "signing failed (mbedTLS -0x%04x)", (unsigned)-rc);
        return MOTE_ERR_TLS;
    }
    /* SEQUENCE { INTEGER r, INTEGER s }: short lengths (at most 72 bytes) */
    e = der + n;
    if (n < 8 || der[0] != 0x30 || der[1] != n - 2) {
        snprintf(err, cap, "the library's signature is not ECDSA's DER");
        return MOTE_ERR_TLS;
    }
    p += 2;
    if (!der_int(&p, e, sig) || !der_int(&p, e, sig + 32) || p != e) {
        snprintf(err, cap, "the library's signature is not ECDSA's DER");
        return MOTE_ERR_TLS;
    }
    return 0;
#else
    (void)key, (void)len, (void)hash, (void)sig;
    snprintf(err, cap, "this build's TLS library has no ECDSA signing (ES256)");
    return MOTE_ERR_NOTSUP;
#endif
}
