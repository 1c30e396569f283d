package holdfast;

import holdfast.fencing.FenceRedis;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The smallest honest {@link FenceRedis}: RESP over a TCP socket to a real redis-server, one connection
 * per thread (Debian has no Java Redis client). Users plug in Jedis or Lettuce instead.
 */
final class RespFenceRedis implements FenceRedis, AutoCloseable {
  private final int port;
  private final List<Socket> opened = new ArrayList<>();
  private final ThreadLocal<Socket> socket = new ThreadLocal<>();

  RespFenceRedis(int port) {
    this.port = port;
  }

  @Override
  public List<?> eval(String script, String key, String arg1, String arg2) throws IOException {
    Object reply = command("EVAL", script, "1", key, arg1, arg2);
    if (!(reply instanceof List)) {
      throw new IOException("EVAL answered " + reply);
    }
    return (List<?>) reply;
  }

  @Override
  public String configGet(String name) throws IOException {
    Object reply = command("CONFIG", "GET", name);
    if (!(reply instanceof List)) {
      throw new IOException("CONFIG GET answered " + reply);
    }
    List<?> pair = (List<?>) reply;
    return pair.size() == 2 ? (String) pair.get(1) : null;
  }

  Object command(String... args) throws IOException {
    Socket connection = connection();
    ByteArrayOutputStream request = new ByteArrayOutputStream();
    request.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.UTF_8));
    for (String arg : args) {
      byte[] bytes = arg.getBytes(StandardCharsets.UTF_8);
      request.writeBytes(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.UTF_8));
      request.writeBytes(bytes);
      request.writeBytes("\r\n".getBytes(StandardCharsets.UTF_8));
    }
    OutputStream out = connection.getOutputStream();
    out.write(request.toByteArray());
    out.flush();
    return read(new BufferedInputStream(connection.getInputStream(), 1)); // unbuffered: the next reply stays in the socket
  }

  private Socket connection() throws IOException {
    Socket current = socket.get();
    if (current == null || current.isClosed()) {
      current = new Socket();
      current.connect(new InetSocketAddress("127.0.0.1", port), 5000);
      current.setSoTimeout(10000);
      socket.set(current);
      synchronized (opened) {
        opened.add(current);
      }
    }
    return current;
  }

  private static Object read(InputStream in) throws IOException {
    int type = in.read();
    String line = readLine(in);
    switch (type) {
      case '+': return line;
      case '-': throw new IOException(line);
      case ':': return Long.parseLong(line);
      case '$': {
        int length = Integer.parseInt(line);
        if (length < 0) {
          return null;
        }
        byte[] bytes = in.readNBytes(length + 2);
        return new String(bytes, 0, length, StandardCharsets.UTF_8);
      }
      case '*': {
        int count = Integer.parseInt(line);
        List<Object> items = new ArrayList<>();
        for (int i = 0; i < count; i++) {
          items.add(read(in));
        }
        return items;
      }
      default: throw new IOException("unexpected RESP reply type " + type);
    }
  }

  private static String readLine(InputStream in) throws IOException {
    StringBuilder line = new StringBuilder();
    for (int c = in.read(); c != '\r'; c = in.read()) {
      if (c < 0) {
        throw new IOException("Redis closed the connection");
      }
      line.append((char) c);
    }
    in.read(); // '\n'
    return line.toString();
  }

  @Override
  public void close() throws IOException {
    synchronized (opened) {
      for (Socket each : opened) {
        each.close();
      }
    }
  }
}
