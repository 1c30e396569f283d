//! The guard: a tower [`Layer`] whose service admits an `http::Request` only when its fence passes
//! the rules and the store, so that it fronts a tonic gRPC server (`Server::builder().layer(..)`)
//! and an HTTP server (axum's `Router::layer`, hyper through `TowerToHyperService`) alike.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Request, Response};
use http_body::{Body, Frame, SizeHint};
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use tower_layer::Layer;
use tower_service::Service;

use super::keys::KeyRing;
use super::refusal::Refusal;
use super::rules::{AdmittedFence, FenceRules, Wire};
use super::store::FenceStore;

type LockRule = dyn Fn(&Parts) -> String + Send + Sync;
type RequestRule = dyn Fn(&Parts) -> bool + Send + Sync;
type RefusalHook = dyn Fn(&Refusal) + Send + Sync;

#[derive(Clone)]
struct Config {
    store: Arc<dyn FenceStore>,
    rules: FenceRules,
    lock: Option<Arc<LockRule>>,
    guards: Option<Arc<RequestRule>>,
    on_refused: Option<Arc<RefusalHook>>,
}

/// The guard's layer, and its builder: every request is guarded unless [`guards`](Self::guards)
/// narrows it. Without a key ring it checks unsigned fences as before signed fences (and the
/// resource's lock, when given one); with a ring it requires signed fences unless
/// [`accept_unsigned`](Self::accept_unsigned). Refusals: gRPC requests (content-type
/// `application/grpc...`) get a trailers-only gRPC status, others an HTTP status with a JSON body
/// ([`Refusal`]). An admitted request carries its [`AdmittedFence`] in its extensions.
#[derive(Clone)]
pub struct FenceGuardLayer {
    config: Arc<Config>,
}

impl std::fmt::Debug for FenceGuardLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FenceGuardLayer")
            .field("rules", &self.config.rules)
            .field("lock", &self.config.lock.is_some())
            .finish_non_exhaustive()
    }
}

impl FenceGuardLayer {
    /// A guard over `store`, with no key ring, namespace `default`, no lock of its own, every
    /// request guarded, and no lease-end check.
    pub fn new(store: impl FenceStore) -> Self {
        Self {
            config: Arc::new(Config {
                store: Arc::new(store),
                rules: FenceRules::default(),
                lock: None,
                guards: None,
                on_refused: None,
            }),
        }
    }

    fn with(mut self, change: impl FnOnce(&mut Config)) -> Self {
        let config = Arc::make_mut(&mut self.config);
        change(config);
        self
    }

    /// The public keys signed fences are checked with; from then on signed fences are required
    /// unless [`accept_unsigned`](Self::accept_unsigned).
    pub fn key_ring(self, ring: KeyRing) -> Self {
        self.with(|config| config.rules.ring = Some(ring))
    }

    /// The holdfast namespace a signed fence must name (default `default`).
    pub fn namespace(self, namespace: impl Into<String>) -> Self {
        let namespace = namespace.into();
        self.with(|config| config.rules.namespace = namespace)
    }

    /// With a key ring, admits requests that carry only the unsigned headers too (checked for the
    /// lock and by the store, but nobody vouches for them: anyone can forge one).
    pub fn accept_unsigned(self, accept: bool) -> Self {
        self.with(|config| config.rules.accept_unsigned = accept)
    }

    /// The lock that protects every request's resource: a fence for another lock is refused.
    pub fn lock(self, lock: impl Into<String>) -> Self {
        let lock: String = lock.into();
        self.lock_from(move |_| lock.clone())
    }

    /// The lock that protects the resource a request touches, from the request (its path, its
    /// headers...).
    pub fn lock_from(self, rule: impl Fn(&Parts) -> String + Send + Sync + 'static) -> Self {
        self.with(|config| config.lock = Some(Arc::new(rule)))
    }

    /// Turns on the lease-end check: a signed fence whose lease ended more than `skew` ago by this
    /// machine's clock is refused (409 / FAILED_PRECONDITION `fence_lease_ended`), even when no
    /// newer holder has written. It assumes this clock and the holdfast server's differ by less
    /// than `skew`. Off by default.
    pub fn lease_end_skew(self, skew: Duration) -> Self {
        self.with(|config| config.rules.lease_end_skew = Some(skew))
    }

    /// Which requests to guard (default: every one); the others pass without a fence.
    pub fn guards(self, rule: impl Fn(&Parts) -> bool + Send + Sync + 'static) -> Self {
        self.with(|config| config.guards = Some(Arc::new(rule)))
    }

    /// Called with every refusal, e.g. to report a holder that lost its lock.
    pub fn on_refused(self, hook: impl Fn(&Refusal) + Send + Sync + 'static) -> Self {
        self.with(|config| config.on_refused = Some(Arc::new(hook)))
    }

    /// The rules this guard checks before its store.
    pub fn rules(&self) -> &FenceRules {
        &self.config.rules
    }
}

impl<S> Layer<S> for FenceGuardLayer {
    type Service = FenceGuard<S>;

    /// Panics when the guard has a key ring but no lock: a signed fence is only worth checking
    /// against the lock of the resource it protects.
    fn layer(&self, inner: S) -> FenceGuard<S> {
        assert!(
            self.config.rules.ring.is_none() || self.config.lock.is_some(),
            "FenceGuardLayer: a guard with a key ring needs the resource's lock (lock or lock_from)"
        );
        FenceGuard {
            inner,
            config: self.config.clone(),
        }
    }
}

/// The guard's service around `S` (made by [`FenceGuardLayer`]).
#[derive(Clone)]
pub struct FenceGuard<S> {
    inner: S,
    config: Arc<Config>,
}

impl<S: std::fmt::Debug> std::fmt::Debug for FenceGuard<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FenceGuard")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

type GuardFuture<RB, E> = Pin<Box<dyn Future<Output = Result<Response<GuardBody<RB>>, E>> + Send>>;

impl<S, B, RB> Service<Request<B>> for FenceGuard<S>
where
    S: Service<Request<B>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = Response<GuardBody<RB>>;
    type Error = S::Error;
    type Future = GuardFuture<RB, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The ready service goes with this request; a clone waits for the next one.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let config = self.config.clone();
        let (mut parts, body) = request.into_parts();
        if config.guards.as_ref().is_some_and(|guards| !guards(&parts)) {
            let call = inner.call(Request::from_parts(parts, body));
            return Box::pin(async move { Ok(call.await?.map(GuardBody::inner)) });
        }
        let grpc = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|value| value.as_bytes().starts_with(b"application/grpc"));
        let lock = config.lock.as_ref().map(|rule| rule(&parts));
        let wire = if grpc { Wire::Grpc } else { Wire::Http };
        let checked = config.rules.admit(&parts.headers, wire, lock.as_deref(), now_ms());
        Box::pin(async move {
            match admit(&config, checked).await {
                Ok(fence) => {
                    parts.extensions.insert(fence);
                    Ok(inner
                        .call(Request::from_parts(parts, body))
                        .await?
                        .map(GuardBody::inner))
                }
                Err(refusal) => {
                    if let Some(hook) = &config.on_refused {
                        hook(&refusal);
                    }
                    Ok(if grpc {
                        grpc_refusal(&refusal)
                    } else {
                        http_refusal(&refusal)
                    })
                }
            }
        })
    }
}

/// Step 8: the store, after steps 1 to 7 passed.
async fn admit(config: &Config, checked: Result<AdmittedFence, Refusal>) -> Result<AdmittedFence, Refusal> {
    let fence = checked?;
    match config.store.check(&fence.lock, fence.token).await {
        Ok(decision) if decision.accepted => Ok(fence),
        Ok(decision) => Err(Refusal::Stale {
            lock: fence.lock,
            token: fence.token,
            newest: decision.newest,
        }),
        Err(err) => Err(Refusal::StoreUnavailable {
            lock: fence.lock,
            cause: err.cause,
        }),
    }
}

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// What gRPC percent-encodes in `grpc-message`: controls, `%` and everything past ASCII.
const GRPC_MESSAGE: &AsciiSet = &CONTROLS.add(b'%');

/// A trailers-only gRPC answer: the status in the headers, no body.
fn grpc_refusal<RB>(refusal: &Refusal) -> Response<GuardBody<RB>> {
    let message = utf8_percent_encode(&refusal.message(), GRPC_MESSAGE).to_string();
    Response::builder()
        .status(http::StatusCode::OK)
        .header(http::header::CONTENT_TYPE, "application/grpc")
        .header("grpc-status", HeaderValue::from(refusal.grpc_code() as i32))
        .header(
            "grpc-message",
            HeaderValue::from_str(&message).expect("percent-encoded ASCII"),
        )
        .body(GuardBody::refusal(None))
        .expect("a valid response")
}

fn http_refusal<RB>(refusal: &Refusal) -> Response<GuardBody<RB>> {
    let body = Bytes::from(refusal.body().to_string());
    Response::builder()
        .status(refusal.http_status())
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CONTENT_LENGTH, body.len())
        .body(GuardBody::refusal(Some(body)))
        .expect("a valid response")
}

pin_project_lite::pin_project! {
    /// The guard's response body: the inner service's, or a refusal's.
    #[project = GuardBodyProjection]
    pub enum GuardBody<B> {
        /// The inner service's body.
        Inner { #[pin] body: B },
        /// A refusal's JSON (none for a gRPC refusal: the status is in the headers).
        Refusal { bytes: Option<Bytes> },
    }
}

impl<B> GuardBody<B> {
    fn inner(body: B) -> Self {
        Self::Inner { body }
    }

    fn refusal(bytes: Option<Bytes>) -> Self {
        Self::Refusal { bytes }
    }
}

impl<B: Body<Data = Bytes>> Body for GuardBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match self.project() {
            GuardBodyProjection::Inner { body } => body.poll_frame(cx),
            GuardBodyProjection::Refusal { bytes } => Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Self::Inner { body } => body.is_end_stream(),
            Self::Refusal { bytes } => bytes.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Inner { body } => body.size_hint(),
            Self::Refusal { bytes } => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
        }
    }
}
