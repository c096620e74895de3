//! TLS for the pushes' and the webhooks' HTTP clients: rustls with the
//! aws-lc crypto provider, the one the AWS SDK's client already links. With
//! reqwest's default (ring) the `deliver` and `forward` functions carried
//! two crypto libraries, and `forward`'s zip went past the 3 MB budget.

/// Makes aws-lc the process's rustls provider, unless one is set already
/// (then that one serves: every provider rustls ships is sound).
pub fn use_aws_lc() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}
