#!/usr/bin/python3
"""A stand-in for xdg-desktop-portal's Camera portal and its permission store, for the tests.

Owns org.freedesktop.portal.Desktop (org.freedesktop.portal.Camera: AccessCamera with its
Request object and Response signal, OpenPipeWireRemote, the IsCameraPresent and version
properties) and org.freedesktop.impl.portal.PermissionStore (Lookup), on the bus in
DBUS_SESSION_BUS_ADDRESS. It decides as xdg-desktop-portal's camera.c does: a stored "yes" grants
(Response 0) and a stored "no" refuses (Response 1) without asking; with nothing stored the
"dialog" answers --answer and the answer is stored. OpenPipeWireRemote succeeds only for a stored
"yes" and returns one end of a socket pair whose other end has written MARKER, so the test can
tell the fd it got is the one sent; with --pipewire-socket PATH it returns instead a socket
connected to the PipeWire daemon listening at PATH (as xdg-desktop-portal hands out a connection
to the session's daemon), so frames can flow through it. Prints "ready" once it owns both names, and
"request <path>" for every Request it exports.

Usage: camera_portal_mock.py --app APP_ID [--answer grant|deny] [--stored yes|no]
                             [--lockdown] [--no-camera-interface] [--no-store]
                             [--pipewire-socket PATH]
"""
import argparse
import socket
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

MARKER = b"viewfinder-mock-pipewire-remote\n"
DESKTOP_PATH = "/org/freedesktop/portal/desktop"
CAMERA = "org.freedesktop.portal.Camera"
REQUEST = "org.freedesktop.portal.Request"
PROPERTIES = "org.freedesktop.DBus.Properties"
STORE = "org.freedesktop.impl.portal.PermissionStore"


class NotAllowed(dbus.DBusException):
    _dbus_error_name = "org.freedesktop.portal.Error.NotAllowed"


class NotFound(dbus.DBusException):
    _dbus_error_name = "org.freedesktop.portal.Error.NotFound"


class Request(dbus.service.Object):
    @dbus.service.method(REQUEST, in_signature="", out_signature="")
    def Close(self):
        self.remove_from_connection()

    @dbus.service.signal(REQUEST, signature="ua{sv}")
    def Response(self, response, results):
        pass


class Portal(dbus.service.Object):
    def __init__(self, bus, options, permissions):
        super().__init__(bus, DESKTOP_PATH)
        self.bus = bus
        self.options = options
        self.permissions = permissions  # app id -> ["yes"] / ["no"]
        self.kept = []  # the socket ends whose peers were sent

    @dbus.service.method(CAMERA, in_signature="a{sv}", out_signature="o", sender_keyword="sender")
    def AccessCamera(self, options, sender):
        if self.options.no_camera_interface:
            raise dbus.DBusException("No such interface", name="org.freedesktop.DBus.Error.UnknownMethod")
        if self.options.lockdown:
            raise NotAllowed("Camera access disabled")
        token = str(options.get("handle_token", "t"))
        path = "%s/request/%s/%s" % (DESKTOP_PATH, sender[1:].replace(".", "_"), token)
        request = Request(self.bus, path)
        print("request", path, flush=True)
        stored = self.permissions.get(self.options.app, [None])[0]
        if stored == "yes":
            response = 0
        elif stored == "no":
            response = 1
        else:
            response = 0 if self.options.answer == "grant" else 1
            self.permissions[self.options.app] = ["yes" if response == 0 else "no"]

        def respond():
            request.Response(dbus.UInt32(response), dbus.Dictionary({}, signature="sv"))
            request.remove_from_connection()
            return False

        GLib.idle_add(respond)
        return dbus.ObjectPath(path)

    @dbus.service.method(CAMERA, in_signature="a{sv}", out_signature="h")
    def OpenPipeWireRemote(self, options):
        if self.options.no_camera_interface:
            raise dbus.DBusException("No such interface", name="org.freedesktop.DBus.Error.UnknownMethod")
        if self.options.lockdown:
            raise NotAllowed("Camera access disabled")
        if self.permissions.get(self.options.app, [None])[0] != "yes":
            raise NotAllowed("Permission denied")
        if self.options.pipewire_socket:
            theirs = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            theirs.connect(self.options.pipewire_socket)
        else:
            ours, theirs = socket.socketpair()
            ours.sendall(MARKER)
            self.kept.append(ours)
        # UnixFd duplicates the descriptor: ours is closed, the D-Bus message carries the copy.
        fd = dbus.types.UnixFd(theirs.fileno())
        theirs.close()
        return fd

    @dbus.service.method(PROPERTIES, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        if interface != CAMERA or self.options.no_camera_interface:
            raise dbus.DBusException("No such interface", name="org.freedesktop.DBus.Error.UnknownInterface")
        if name == "IsCameraPresent":
            return dbus.Boolean(True, variant_level=1)
        if name == "version":
            return dbus.UInt32(1, variant_level=1)
        raise dbus.DBusException("No such property", name="org.freedesktop.DBus.Error.UnknownProperty")


class PermissionStore(dbus.service.Object):
    def __init__(self, bus, permissions):
        super().__init__(bus, "/org/freedesktop/impl/portal/PermissionStore")
        self.permissions = permissions

    @dbus.service.method(STORE, in_signature="ss", out_signature="a{sas}v")
    def Lookup(self, table, id):
        if table != "devices" or id != "camera" or not self.permissions:
            raise NotFound("No entry for %s" % id)
        return (dbus.Dictionary(self.permissions, signature="sas"), dbus.Byte(0, variant_level=1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--app", required=True)
    parser.add_argument("--answer", choices=["grant", "deny"], default="grant")
    parser.add_argument("--stored", choices=["yes", "no"])
    parser.add_argument("--lockdown", action="store_true")
    parser.add_argument("--no-camera-interface", action="store_true")
    parser.add_argument("--no-store", action="store_true")
    parser.add_argument("--pipewire-socket")
    options = parser.parse_args()

    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    permissions = {options.app: [options.stored]} if options.stored else {}
    portal_name = dbus.service.BusName("org.freedesktop.portal.Desktop", bus)
    objects = [portal_name, Portal(bus, options, permissions)]
    if not options.no_store:
        objects += [dbus.service.BusName(STORE, bus), PermissionStore(bus, permissions)]
    print("ready", flush=True)
    loop = GLib.MainLoop()
    # Ends when the test closes stdin (or the bus goes away).
    GLib.io_add_watch(sys.stdin.fileno(), GLib.IO_HUP | GLib.IO_IN | GLib.IO_ERR, lambda *_: loop.quit() or False)
    loop.run()


if __name__ == "__main__":
    main()
