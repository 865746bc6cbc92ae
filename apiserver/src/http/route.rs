//! Routing: what a request path names (discovery documents, a collection, an object
//! and its subresource), resolved against the served registrations.

use crate::errors::StatusError;
use crate::query::percent_decode;
use crate::server::Inner;

/// What a path names.
pub(crate) enum Target {
    Version,
    /// A self review (access or identity): answered, never stored.
    SelfReview(&'static str),
    OpenApiV2,
    OpenApiV3Index,
    OpenApiV3(String),
    Health(String, Option<String>),
    Api,
    Apis,
    Group(String),
    Resources(String),
    Collection {
        idx: usize,
        ns: Option<String>,
    },
    Object {
        idx: usize,
        ns: String,
        name: String,
        sub: Option<String>,
    },
}

/// What a path names; `view` is set when a CRD version serves its storage version's
/// objects (apiVersion to rewrite: from, to).
pub(crate) fn route(
    inner: &Inner,
    path: &str,
    view: &mut Option<(String, String)>,
) -> Result<Target, StatusError> {
    let not_found = || {
        StatusError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    };
    let segs: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .map(percent_decode)
        .collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let (gv, rest) = match segs.as_slice() {
        ["version"] => return Ok(Target::Version),
        ["apis", "authorization.k8s.io", "v1", "selfsubjectaccessreviews"] => {
            return Ok(Target::SelfReview("SelfSubjectAccessReview"))
        }
        ["apis", "authentication.k8s.io", "v1", "selfsubjectreviews"] => {
            return Ok(Target::SelfReview("SelfSubjectReview"))
        }
        ["openapi", "v2"] => return Ok(Target::OpenApiV2),
        ["openapi", "v3"] => return Ok(Target::OpenApiV3Index),
        ["openapi", "v3", rest @ ..] => return Ok(Target::OpenApiV3(rest.join("/"))),
        [h @ ("healthz" | "readyz" | "livez")] => return Ok(Target::Health((*h).to_owned(), None)),
        [h @ ("healthz" | "readyz" | "livez"), check] => {
            return Ok(Target::Health((*h).to_owned(), Some((*check).to_owned())))
        }
        ["api"] => return Ok(Target::Api),
        ["apis"] => return Ok(Target::Apis),
        ["apis", g] => return Ok(Target::Group((*g).to_owned())),
        ["api", v, rest @ ..] => ((*v).to_owned(), rest),
        ["apis", g, v, rest @ ..] => (format!("{g}/{v}"), rest),
        _ => return Err(not_found()),
    };
    if rest.is_empty() {
        let st = inner.state.read();
        if st
            .collections
            .iter()
            .any(|c| c.served && c.reg.api_version() == gv)
        {
            return Ok(Target::Resources(gv));
        }
        return Err(not_found());
    }
    let st = inner.state.read();
    let lookup = |plural: &str| st.lookup(&gv, plural);
    let storage = |idx: usize, view: &mut Option<(String, String)>| match st.storage_of(idx) {
        Some((s, from, to)) => {
            *view = Some((from, to));
            s
        }
        None => idx,
    };
    let namespaced_lookup = |plural: &str| {
        st.lookup(&gv, plural)
            .filter(|i| st.collections[*i].reg.namespaced)
    };
    let target = match rest {
        ["namespaces", ns, res, tail @ ..] if namespaced_lookup(res).is_some() => {
            let idx = namespaced_lookup(res).ok_or_else(not_found)?;
            let idx = storage(idx, view);
            match tail {
                [] => Target::Collection {
                    idx,
                    ns: Some((*ns).to_owned()),
                },
                [name] => Target::Object {
                    idx,
                    ns: (*ns).to_owned(),
                    name: (*name).to_owned(),
                    sub: None,
                },
                [name, sub] => Target::Object {
                    idx,
                    ns: (*ns).to_owned(),
                    name: (*name).to_owned(),
                    sub: Some((*sub).to_owned()),
                },
                _ => return Err(not_found()),
            }
        }
        [res, tail @ ..] => {
            let idx = lookup(res).ok_or_else(not_found)?;
            let idx = storage(idx, view);
            let namespaced = st.collections[idx].reg.namespaced;
            match tail {
                [] => Target::Collection { idx, ns: None },
                [name] if !namespaced => Target::Object {
                    idx,
                    ns: String::new(),
                    name: (*name).to_owned(),
                    sub: None,
                },
                [name, sub] if !namespaced => Target::Object {
                    idx,
                    ns: String::new(),
                    name: (*name).to_owned(),
                    sub: Some((*sub).to_owned()),
                },
                _ => return Err(not_found()),
            }
        }
        [] => return Err(not_found()),
    };
    Ok(target)
}
