//! Mirroring a whole remote (branches and tags) into a bare cache
//! repository, for dependencies that pin any branch, tag or commit.

use super::{gix_msg, redact_url, CacheRepo, Credentials, GitError, Result};
use gix::ObjectId;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

/// What a mirror fetch saw and did.
#[derive(Debug, Clone, Default)]
pub struct MirrorOutcome {
    /// The remote's references (`refs/heads/...`, `refs/tags/...`) and the
    /// commit or tag object each points at.
    pub remote_refs: BTreeMap<String, ObjectId>,
    /// Whether a pack was received (something changed on the remote).
    pub received_pack: bool,
}

impl CacheRepo {
    /// The underlying gix repository, for reading refs and objects.
    pub fn repo(&self) -> &gix::Repository {
        &self.repo
    }

    /// Fetches every branch (to `refs/remotes/origin/*`) and tag (to
    /// `refs/tags/*`) of `url`. Unchanged refs cost only the ref listing:
    /// gix negotiates no pack when every tip is already present.
    pub fn fetch_mirror(
        &self,
        url: &str,
        credentials: Option<&Credentials>,
    ) -> Result<MirrorOutcome> {
        let shown = redact_url(url);
        let fetch_err = |message: String| GitError::Fetch {
            url: shown.clone(),
            branch: "*".to_string(),
            message,
        };
        let remote = self
            .repo
            .remote_at(url)
            .map_err(|e| GitError::Url {
                url: shown.clone(),
                // gix quotes the URL it cannot parse (`input="…"`), its
                // password too (re-probe verify23,
                // v-dependency-url-credentials-in-fetch-errors).
                message: gix_msg(e).replace(url, &shown),
            })?
            .with_fetch_tags(gix::remote::fetch::Tags::None)
            .with_refspecs(
                [
                    "+refs/heads/*:refs/remotes/origin/*",
                    "+refs/tags/*:refs/tags/*",
                    // The default branch, for dependencies pinned to none.
                    "+HEAD:refs/remotes/origin/HEAD",
                ],
                gix::remote::Direction::Fetch,
            )
            .map_err(|e| fetch_err(gix_msg(e)))?;
        let mut connection = remote
            .connect(gix::remote::Direction::Fetch)
            .map_err(|e| fetch_err(gix_msg(e)))?;
        if let Some(c) = credentials.cloned() {
            connection.set_credentials(super::token_only(c, url));
        }
        let prepare = connection
            .prepare_fetch(gix::progress::Discard, Default::default())
            .map_err(|e| fetch_err(gix_msg(e)))?;
        let mut out = MirrorOutcome::default();
        for r in &prepare.ref_map().remote_refs {
            let (name, target, peeled) = r.unpack();
            let Some(id) = peeled.or(target) else {
                continue;
            };
            let name = name.to_string();
            if name.starts_with("refs/heads/") || name.starts_with("refs/tags/") {
                out.remote_refs.insert(name, id.to_owned());
            }
        }
        if prepare.ref_map().mappings.is_empty() {
            // An empty remote: nothing to receive.
            return Ok(out);
        }
        let interrupt = AtomicBool::new(false);
        let outcome = prepare
            .receive(gix::progress::Discard, &interrupt)
            .map_err(|e| fetch_err(gix_msg(e)))?;
        out.received_pack = matches!(outcome.status, gix::remote::fetch::Status::Change { .. });
        Ok(out)
    }
}
