package holdfast.fencing;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.regex.Pattern;

/**
 * A signed fence's text taken apart by the rules of clients/conformance/signed-fence.md
 * ({@code v1:<key_id>:<namespace>:<lock>:<token>:<lease_end_ms>:<signature>}), before any key is asked:
 * a fence that breaks a rule is malformed. {@link FenceKeyRing#verify} then checks the signature.
 */
final class SignedFence {
  static final int MAX_LENGTH = 4096;
  private static final Pattern KEY_ID = Pattern.compile("[A-Za-z0-9_-]{1,64}");
  private static final Pattern TOKEN = Pattern.compile("[1-9][0-9]{0,19}");
  private static final Pattern LEASE_END = Pattern.compile("0|[1-9][0-9]{0,19}");
  private static final Pattern SIGNATURE = Pattern.compile("[A-Za-z0-9_-]{86}");

  final String text;
  final String keyId;
  final String namespace;
  final String lock;
  final long token;
  final Long leaseEndMs; // null: the fence states no end
  final byte[] signed; // the bytes the signature covers: everything before the last ':'
  final byte[] signature;

  private SignedFence(String text, String[] fields, String namespace, String lock, long token, Long leaseEndMs, byte[] signature) {
    this.text = text;
    this.keyId = fields[1];
    this.namespace = namespace;
    this.lock = lock;
    this.token = token;
    this.leaseEndMs = leaseEndMs;
    this.signed = text.substring(0, text.lastIndexOf(':')).getBytes(StandardCharsets.US_ASCII);
    this.signature = signature;
  }

  /**
   * Takes {@code text} apart; {@code header} names where it came from in the error.
   *
   * @throws BadFenceException (malformed, field "fence") naming the rule it breaks, never echoing the fence
   */
  static SignedFence parse(String text, String header) throws BadFenceException {
    if (text.length() > MAX_LENGTH) {
      throw bad(header, "is longer than " + MAX_LENGTH + " characters");
    }
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x20 || c > 0x7e) {
        throw bad(header, "has a character that is not printable ASCII");
      }
    }
    String[] fields = text.split(":", -1);
    if (fields.length != 7) {
      throw bad(header, "has " + fields.length + " fields, not the 7 of v1:<key_id>:<namespace>:<lock>:<token>:<lease_end_ms>:<signature>");
    }
    if (!"v1".equals(fields[0])) {
      throw bad(header, "is not of version v1");
    }
    if (!KEY_ID.matcher(fields[1]).matches()) {
      throw bad(header, "has a key id that is not 1 to 64 characters of A-Z a-z 0-9 _ -");
    }
    String namespace = FenceWire.decodeLock(fields[2]);
    if (namespace == null || namespace.isEmpty()) {
      throw bad(header, "has a namespace that is not a non-empty percent-encoded UTF-8 name");
    }
    String lock = FenceWire.decodeLock(fields[3]);
    if (lock == null || lock.isEmpty()) {
      throw bad(header, "has a lock that is not a non-empty percent-encoded UTF-8 name");
    }
    long token;
    Long leaseEnd = null;
    try {
      if (!TOKEN.matcher(fields[4]).matches()) {
        throw new NumberFormatException();
      }
      token = Long.parseUnsignedLong(fields[4]);
    } catch (NumberFormatException e) {
      throw bad(header, "has a token that is not an unsigned decimal from 1 to 18446744073709551615 without leading zeros");
    }
    try {
      if (!fields[5].isEmpty()) {
        if (!LEASE_END.matcher(fields[5]).matches()) {
          throw new NumberFormatException();
        }
        leaseEnd = Long.parseUnsignedLong(fields[5]);
      }
    } catch (NumberFormatException e) {
      throw bad(header, "has a lease end that is neither empty nor an unsigned decimal up to 18446744073709551615 "
          + "without leading zeros");
    }
    byte[] signature = null;
    if (SIGNATURE.matcher(fields[6]).matches()) {
      signature = Base64.getUrlDecoder().decode(fields[6]);
      if (!Base64.getUrlEncoder().withoutPadding().encodeToString(signature).equals(fields[6])) {
        signature = null; // spare bits set in the last character: not the canonical encoding
      }
    }
    if (signature == null) {
      throw bad(header, "has a signature that is not 86 characters of canonical base64url without padding");
    }
    return new SignedFence(text, fields, namespace, lock, token, leaseEnd, signature);
  }

  private static BadFenceException bad(String header, String what) {
    return FenceWire.malformed("fence", header, header + " " + what);
  }
}
