// The server address a client dials, checked before grpc-js sees it: grpc-js silently dials port
// 443 for "host" alone, and reads "http://host:port" as a DNS name that never resolves.

/** The address given to HoldfastClient is not one it can dial; the message says why. */
export class InvalidAddressError extends Error {
  override readonly name = 'InvalidAddressError';
  constructor(
    readonly address: string,
    /** What is wrong with it and what to give instead. */
    readonly reason: string,
  ) {
    super(`holdfast address "${address}": ${reason}`);
  }
}

/** gRPC target forms (unix:/path, dns:host:port, ...) that grpc-js reads itself: passed on as they are. */
const GRPC_TARGET = /^(unix|unix-abstract|dns|ipv4|ipv6|vsock):/;
const URL_SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
const HOST_PORT = /^(\[[^\]]+\]|[^:[\]\s]+):(.*)$/;
const EXAMPLE = 'give host:port, e.g. 127.0.0.1:50051';

/** Returns `address` when it is host:port (or a gRPC target form), else throws InvalidAddressError. */
export function checkAddress(address: string): string {
  if (address === '') throw new InvalidAddressError(address, `empty: ${EXAMPLE}`);
  if (GRPC_TARGET.test(address)) return address;
  const scheme = URL_SCHEME.exec(address)?.[1];
  if (scheme) {
    const tls = /^(https|grpcs)$/i.test(scheme) ? ' (for TLS give the tls option; --tls on the command line)' : '';
    throw new InvalidAddressError(address, `a URL: ${EXAMPLE}, without "${scheme}://"${tls}`);
  }
  const hostPort = HOST_PORT.exec(address);
  if (!hostPort) {
    const bareIpv6 = (address.match(/:/g)?.length ?? 0) > 1 && !address.startsWith('[');
    throw new InvalidAddressError(address, bareIpv6 ? 'an IPv6 address needs brackets: e.g. [::1]:50051' : `no port: ${EXAMPLE}`);
  }
  const port = hostPort[2];
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    throw new InvalidAddressError(address, `port "${port}" is not a number from 1 to 65535`);
  }
  return address;
}
