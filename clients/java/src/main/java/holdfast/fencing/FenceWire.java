package holdfast.fencing;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

/**
 * The fence's wire text (clients/conformance/fencing.json): the lock name percent-encoded as
 * JavaScript's encodeURIComponent writes it, the token as unsigned decimal without leading zeros.
 */
public final class FenceWire {
  /** gRPC metadata keys (lower case, as HTTP/2 sends them). */
  public static final String GRPC_LOCK = "holdfast-fence-lock";
  public static final String GRPC_TOKEN = "holdfast-fence-token";
  /** HTTP header names (matched case-insensitively). */
  public static final String HTTP_LOCK = "Holdfast-Fence-Lock";
  public static final String HTTP_TOKEN = "Holdfast-Fence-Token";
  /** The signed fence's gRPC metadata key and HTTP header (clients/conformance/signed-fence.md). */
  public static final String GRPC_SIGNED = "holdfast-fence";
  public static final String HTTP_SIGNED = "Holdfast-Fence";

  private static final Pattern TOKEN = Pattern.compile("0|[1-9][0-9]{0,19}");
  // encodeURIComponent leaves these as they are.
  private static final String UNRESERVED = "-_.!~*'()";

  private FenceWire() {}

  /** The lock name as the header carries it. */
  public static String encodeLock(String lock) {
    StringBuilder out = new StringBuilder();
    for (byte b : lock.getBytes(StandardCharsets.UTF_8)) {
      int c = b & 0xff;
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || UNRESERVED.indexOf(c) >= 0) {
        out.append((char) c);
      } else {
        out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
            .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
      }
    }
    return out.toString();
  }

  /**
   * Reads a fence from its two header values (null when absent).
   *
   * @param lockHeader the name of the lock's header, for the error
   * @param tokenHeader the name of the token's header, for the error
   * @throws BadFenceException when one is missing or malformed
   */
  public static Fence parse(String lockValue, String tokenValue, String lockHeader, String tokenHeader)
      throws BadFenceException {
    if (tokenValue == null) {
      throw missing("token", tokenHeader);
    }
    if (lockValue == null) {
      throw missing("lock", lockHeader);
    }
    if (!TOKEN.matcher(tokenValue).matches()) {
      throw malformedToken(tokenHeader);
    }
    long token;
    try {
      token = Long.parseUnsignedLong(tokenValue);
    } catch (NumberFormatException e) {
      throw malformedToken(tokenHeader);
    }
    String lock = decodeLock(lockValue);
    if (lock == null || lock.isEmpty()) {
      throw malformed("lock", lockHeader, lockHeader + " must be a non-empty percent-encoded UTF-8 lock name");
    }
    return new Fence(lock, token);
  }

  private static BadFenceException malformedToken(String header) {
    return malformed("token", header, header + " must be an unsigned decimal number up to 18446744073709551615 without "
        + "leading zeros");
  }

  /** {@code missing fence: header {header} is required} (signed-fence.md). */
  static BadFenceException missing(String field, String header) {
    return new BadFenceException(BadFenceException.Kind.MISSING, field, header, "missing fence: header " + header + " is required");
  }

  /** {@code malformed fence: {what}} (signed-fence.md). */
  static BadFenceException malformed(String field, String header, String what) {
    return new BadFenceException(BadFenceException.Kind.MALFORMED, field, header, "malformed fence: " + what);
  }

  /** A percent-encoded name (lock or namespace) decoded, or null when the encoding or the UTF-8 under it is invalid. */
  public static String decode(String text) {
    return decodeLock(text);
  }

  /** The decoded name, or null when the percent-encoding or the UTF-8 under it is invalid. */
  static String decodeLock(String text) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '%') {
        if (i + 2 >= text.length()) {
          return null;
        }
        int hi = Character.digit(text.charAt(i + 1), 16);
        int lo = Character.digit(text.charAt(i + 2), 16);
        if (hi < 0 || lo < 0) {
          return null;
        }
        bytes.write(hi * 16 + lo);
        i += 2;
      } else if (c > 0x7f) {
        return null; // a header value is ASCII; non-ASCII must come encoded
      } else {
        bytes.write(c);
      }
    }
    try {
      return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes.toByteArray())).toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }
}
