//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`),
//! decoded into the JSON the rest of the server works on, and the server's protobuf
//! answers.
//!
//! client-go's typed clients send built-in kinds as protobuf by default and never fall
//! back to JSON (not even on 415); kubectl's `create` subcommands and typed deletes do
//! too. So the server decodes every built-in kind, as kube-apiserver does. The table of
//! every built-in field and the decoder live in `kubegen_apimachinery::protobuf`, which
//! the runtime's client shares.

pub(crate) use kubegen_apimachinery::protobuf::{
    base64, decode, encode_list, encode_object, watch_frame, MEDIA_TYPE,
};

/// Whether bodies of this kind can be decoded.
#[cfg(test)]
pub(crate) fn knows(api_version: &str, kind: &str) -> bool {
    kubegen_apimachinery::protobuf::is_built_in(api_version, kind)
}
