package holdfast.fencing;

/** A request's fence is missing or malformed: gRPC INVALID_ARGUMENT, HTTP 400, naming the header. */
public final class BadFenceException extends Exception {
  private static final long serialVersionUID = 1L;

  /** missing_fence or malformed_fence, as the HTTP body's {@code error} says. */
  public enum Kind {
    MISSING("missing_fence"),
    MALFORMED("malformed_fence");

    private final String code;

    Kind(String code) {
      this.code = code;
    }

    public String code() {
      return code;
    }
  }

  private final Kind kind;
  private final String field;
  private final String header;

  BadFenceException(Kind kind, String field, String header, String message) {
    super(message);
    this.kind = kind;
    this.field = field;
    this.header = header;
  }

  public Kind kind() {
    return kind;
  }

  /** "lock", "token", or "fence" (the signed fence). */
  public String field() {
    return field;
  }

  /** The header (or metadata key) at fault. */
  public String header() {
    return header;
  }
}
